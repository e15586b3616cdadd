"""A log's event records on the plain report: blinded and masked as the trainer's alerts.

A blind run folder cut at step 750 (tests/commands/test_blind.py's `run_folder`), its log
given three events: one quoting the hidden read (`new best eval_chunk_mae 3.5000`), one
naming the rule's metric in other spelling, and one holding a Hugging Face token. A real
`attach --plain` prints none of the read and no token; an event that quotes nothing stays
whole; the same folder without the blind shows the detail (masked still)."""

from __future__ import annotations

import pytest

from tests.commands.test_blind import SECRETS, cli, run_folder
from tests.logs import T0, dumps

TOKEN = "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"
EVENTS = (
    {"kind": "event", "step": 750, "time": T0 + 400, "event": "best_model",
     "detail": "new best eval_chunk_mae 3.5000 at step 750"},
    {"kind": "event", "step": 750, "time": T0 + 401, "event": "note",
     "detail": "Eval Chunk MAE improved"},
    {"kind": "event", "step": 750, "time": T0 + 402, "event": "env",
     "detail": f"HF_TOKEN={TOKEN}"},
    {"kind": "event", "step": 750, "time": T0 + 403, "event": "warmup",
     "detail": "learning rate warm"},
)  # fmt: skip


def events_folder(tmp_path, blind: bool):
    root = run_folder(tmp_path, 750, blind=blind)
    with (root / "train_log.jsonl").open("a") as fh:
        for rec in EVENTS:
            fh.write(dumps(rec) + "\n")
    return root


@pytest.mark.parametrize("blind", [True, False], ids=["blinded", "open"])
def test_attach_plain_hides_events_that_quote_the_read_and_masks_their_tokens(tmp_path, blind):
    root = events_folder(tmp_path, blind)
    out = cli(tmp_path, "attach", str(root), "--plain", "--quiet-end", "1")
    assert out.returncode == (7 if blind else 14), out.stderr  # BLINDED; AMBIGUOUS, provisional
    events = [x for x in out.stdout.splitlines() if x.startswith("event ") and "at step 750" in x]
    assert len(events) == 4, out.stdout
    assert TOKEN not in out.stdout + out.stderr
    assert "event env at step 750: HF_TOKEN=***" in out.stdout, out.stdout
    assert "event warmup at step 750: learning rate warm" in out.stdout
    if not blind:
        assert "new best eval_chunk_mae 3.5000 at step 750" in out.stdout
        assert "Eval Chunk MAE improved" in out.stdout
        return
    said = "\n".join(x for x in out.stdout.splitlines() if not x.startswith("step "))
    assert not any(s in said for s in SECRETS), said
    assert "MAE" not in said and "eval_chunk_mae" not in said, said
    assert "event best_model at step 750: its words hold a number" in out.stdout, out.stdout
    assert "hidden until the final read" in out.stdout
