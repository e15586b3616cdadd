"""`fontaine-tui bank add` of a launched `[command]` run whose last attempt finished.

The user's trainer writes a JSONL log that never says its end; attempts.jsonl records that its
attempt finished. `bank add` banks it without `--ended`, and the entry's `ended` says what
ended it (the attempt's record, at its step), never that the one who banked it said so. Real
`launch --plain` of a real trainer, the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TRAINER = """import json, sys
with open(sys.argv[1] + "/log.jsonl", "a") as f:
    for s in range(1, 41):
        f.write(json.dumps({"step": s, "train/loss": 1.0 / s}) + "\\n")
        if s % 10 == 0:
            f.write(json.dumps({"step": s, "eval/chunk_mae": 2.9 - s / 1000}) + "\\n")
"""

PRESET = """[run]
name = "own"
output_dir = "runs/own"

[command]
argv = ["{python}", "{trainer}", "{{output_dir}}"]

[source]
kind = "jsonl"
eval_every = 10

[verdict]
metric = "eval/chunk_mae"
anchor_step = 20
endpoint_step = 40
healthy_max = 0.3
drift_min = 1.0
"""


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "FONTAINE_BANK": str(cwd / "bank")},
    )


def test_a_finished_command_run_is_banked_ended_by_its_attempt(tmp_path, registry_path):
    (tmp_path / "train.py").write_text(TRAINER)
    preset = tmp_path / "own.toml"
    preset.write_text(PRESET.format(python=sys.executable, trainer=tmp_path / "train.py"))
    launched = cli(tmp_path, "launch", str(preset), "--plain")
    assert launched.returncode == 0, launched.stdout[-2000:] + launched.stderr
    folder = tmp_path / "runs" / "own"
    last = json.loads((folder / "attempts.jsonl").read_text().splitlines()[-1])
    assert (last["event"], last["cause"], last["last_step"]) == ("end", "finished", 40), last

    res = cli(tmp_path, "bank", "add", str(folder), "--as", "own")  # no --ended
    assert res.returncode == 0, res.stderr
    doc = json.loads(cli(tmp_path, "bank", "show", "own", "-j").stdout)
    assert doc["format"] == "jsonl" and [p["step"] for p in doc["probes"]] == [10, 20, 30, 40]
    assert doc["ended"] == "attempts.jsonl says its last attempt finished at step 40", doc
