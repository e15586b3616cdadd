"""`launch --resume` of a run that finished: nothing to resume, refused in one line.

A [command] trainer (a few lines of Python writing JSONL) is launched with `launch --plain` and
runs to its end. A resume of it then has nothing left to train: it is refused before anything
starts, and nothing in the run folder or the registry changes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TRAINER = """import json, os, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "metrics.jsonl"), "a") as fh:
    for s in range(1, 41):
        rec = {"step": s, "loss": 2.0 - s / 40}
        if s % 10 == 0:
            rec["eval_loss"] = 1.8 - s / 100
        fh.write(json.dumps(rec) + "\\n")
"""


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FONTAINE_NOTIFY"}
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=tmp_path,
        env={**env, "XDG_CONFIG_HOME": str(tmp_path / "cfg")},
        capture_output=True,
        text=True,
        timeout=120,
    )


def snapshot(*roots: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file under `roots`: its size, mtime and bytes."""
    out = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file():
                st = p.stat()
                out[str(p)] = (st.st_size, st.st_mtime_ns, p.read_bytes())
    return out


def test_a_finished_run_has_nothing_to_resume(tmp_path: Path, registry_path: Path) -> None:
    (tmp_path / "trainer.py").write_text(TRAINER)
    argv = f'"{sys.executable}", "{tmp_path / "trainer.py"}", "{{output_dir}}"'
    (tmp_path / "done.toml").write_text(f"""[run]
name = "done"
output_dir = "runs/done"
[command]
argv = [{argv}]
resume_argv = [{argv}]
[source]
kind = "jsonl"
[verdict]
metric = "eval_loss"
anchor_step = 10
endpoint_step = 40
healthy_max = 0.0
drift_min = 0.2
""")
    done = cli(tmp_path, "launch", "./done.toml", "--plain", "--poll", "0.2")
    assert "command finished at step 40" in done.stdout, done.stdout + done.stderr
    folder = tmp_path / "runs" / "done"
    before = snapshot(folder, registry_path.parent)
    again = cli(tmp_path, "launch", "./done.toml", "--resume", "--plain", "--poll", "0.2")
    assert again.returncode == 2, again.stdout + again.stderr
    assert again.stderr.count("\n") == 1 and "nothing to resume" in again.stderr, again.stderr
    assert "attempt 1 finished at step 40" in again.stderr, again.stderr
    assert again.stdout == ""
    assert snapshot(folder, registry_path.parent) == before  # nothing written
