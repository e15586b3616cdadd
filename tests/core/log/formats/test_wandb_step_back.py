"""A trainer's step that goes back inside one W&B run: the trainer resumed from a checkpoint
into the same run (Hugging Face's `resume_from_checkpoint` with the same wandb run), so
`train/global_step` runs 10 to 200, then 50 to 100, while W&B's own `_step` counts on.

The later segment is the run's timeline: it takes over from its first step, as a resume in
our own log or a TensorBoard restart does. A verdict never reads a label from the abandoned
segment (there the endpoint, step 200, was reached with a drift); it reads the run as it now
stands, at step 100, provisionally. `inspect` says the step going back on its step line and
counts the rows in what it could not take as logged. The run is written by the real wandb,
offline, in a child process; the commands are real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.log.formats.wandbkit import write_runs

pytest.importorskip("wandb")

STEP = "train/global_step"
FIRST = list(range(10, 210, 10))  # the attempt the resume abandoned
LATER = list(range(50, 110, 10))  # resumed from the step-40 checkpoint


def row(step: int, later: bool) -> dict:
    out: dict[str, float] = {STEP: step, "train/loss": (2.0 if later else 1.0) / step}
    if step % 20 == 0:  # the abandoned segment drifts at step 100; the later one does not
        out["eval/loss"] = 0.6 if later else (0.5 if step < 100 else 2.0)
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wandb_step_back")
    run = tmp / "run"
    rows = [[None, row(s, False)] for s in FIRST] + [[None, row(s, True)] for s in LATER]
    write_runs(tmp, [{"project": "p", "dir": str(run), "id": "back1", "rows": rows}])
    return run


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args], capture_output=True, text=True, timeout=120
    )


def preset(tmp_path: Path, endpoint: int = 200) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(f'''[run]
name = "back"
question = "Does the eval loss rise after step 20?"

[source]
kind = "wandb"
loss = "train/loss"
step = "{STEP}"
eval_every = 20

[verdict]
metric = "eval/loss"
direction = "lower"
read = "delta"
anchor_step = 20
endpoint_step = {endpoint}
healthy_max = 0.3
drift_min = 1.0
''')
    return path


def test_verdict_reads_no_label_from_the_abandoned_segment(folder, tmp_path):
    """The run ended (W&B exit 0) at step 100 of its timeline: step 200 is no longer in it."""
    done = cli("verdict", str(folder), "-p", str(preset(tmp_path)), "--json")
    v = json.loads(done.stdout)
    assert v["label"] == "UNDECIDABLE", v
    assert "no probe at the endpoint (step 200)" in v["reason"], v["reason"]
    assert "ended at step 100" in v["reason"], v["reason"]
    said = " ".join(v["log"]["notices"])
    assert "6 row(s)" in said and STEP in said and "resume" in said, v["log"]
    assert v["log"]["resumes"] == 1, v["log"]


def test_verdict_at_a_step_logged_twice_reads_the_later_segment(folder, tmp_path):
    """At step 100 the later segment's eval (0.6) holds, not the abandoned one's (2.0)."""
    done = cli("verdict", str(folder), "-p", str(preset(tmp_path, 100)), "--json")
    v = json.loads(done.stdout)
    assert (v["read_step"], v["anchor_value"], v["read_value"]) == (100, 0.5, 0.6), v
    assert v["label"] == "HEALTHY" and v["provisional"] is False, v


def test_verdict_text_says_the_rows_going_back(folder, tmp_path):
    done = cli("verdict", str(folder), "-p", str(preset(tmp_path)))
    verdict = next(line for line in done.stdout.splitlines() if line.startswith("VERDICT"))
    assert verdict.startswith("VERDICT: UNDECIDABLE"), done.stdout
    assert f"6 row(s) of {STEP!r} going back in steps" in done.stdout, done.stdout


def test_inspect_says_the_step_going_back_on_its_step_line_and_in_unread(folder, tmp_path):
    drafted = tmp_path / "drafted.toml"
    done = cli("inspect", str(folder), "--preset-out", str(drafted))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    step = next(line for line in lines if line.startswith("step "))
    assert repr(STEP) in step and "goes back" in step and "resume" in step, step
    assert "unread   nothing" not in done.stdout, done.stdout
    unread = done.stdout[done.stdout.index("unread") :]
    assert "6 row(s)" in unread, done.stdout
    assert f'step = "{STEP}"' in drafted.read_text()
    ins = json.loads(cli("inspect", str(folder), "--json").stdout)
    assert ins["step_key"] == STEP and ins["last_step"] == 100, ins
    assert any("6 row(s)" in n for n in ins["notices"]), ins["notices"]
