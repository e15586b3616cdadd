"""A blinded run's last event, where a surface says how the run ended: worded as every event is.

A blind run folder cut at step 750 (tests/commands/test_blind.py's `run_folder`) whose log
ends with `end` at step 750, its detail quoting the hidden read. The notification a real
`babysit --once` posts for the run's end (to a webhook on 127.0.0.1) says the end without
the detail, as the plain report's event lines do (core/watch/traineralerts.py's
`event_words`); the same folder without the blind keeps the detail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands.test_blind import SECRETS, run_folder
from tests.core.notify.server import Hook
from tests.logs import T0, records_upto, write_log

DETAIL = "crashed; best eval_chunk_mae 3.5000"
END = {"kind": "event", "step": 750, "time": T0 + 400, "event": "end", "detail": DETAIL}


def ended(tmp_path: Path, blind: bool) -> Path:
    root = run_folder(tmp_path, 750, blind=blind)
    write_log(root / "train_log.jsonl", [*records_upto(750), END])
    return root


@pytest.mark.parametrize("blind", [True, False], ids=["blinded", "open"])
def test_the_end_notification_words_the_last_event_as_the_blind_says(tmp_path, blind):
    root = ended(tmp_path, blind)
    hook = Hook()
    env = {
        **os.environ,
        "FONTAINE_USER": "alice",
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "FONTAINE_NOTIFY": hook.url("/hooks/TOKEN42"),
    }
    env.pop("FONTAINE_REGISTRY", None)
    try:
        out = subprocess.run(
            [sys.executable, "-m", "fontaine_tui", "babysit", str(root), "--once"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        posts = [json.loads(r.body) for r in hook.wait_for(3)]
    finally:
        hook.close()
    [final] = [p for p in posts if ": VERDICT " in p["title"]]
    first = final["text"].splitlines()[0]
    if not blind:
        assert first == f"the log ended at step 750: {DETAIL}", final
        return
    assert first.startswith("the log ended at step 750: its words hold a number"), final
    said = json.dumps(posts) + out.stdout + out.stderr
    assert "eval_chunk_mae 3.5000" not in said, said
    assert not any(s in said for s in SECRETS), said
    assert "TOKEN42" not in out.stdout + out.stderr
