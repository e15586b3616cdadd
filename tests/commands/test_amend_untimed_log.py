"""An amendment whose first step the engine's log passed without a `time` is refused.

The engine's log (schema v1) records each line's `time`, and an amendment is held to that
clock: one declared after the log had logged a probe at the step it first affects is late (a
ledger carried back from a stale copy of the run). A probe written without its `time` leaves
that clock nothing to read, so an amendment whose first step the log shows only such probes
for cannot be shown to be in time: it is refused, in one line naming the log's line. Another
trainer's log may record no time at all (its format does not require one): there the steps
the declaration saw are all there is, as before."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from tests.core.launch.conftest import without_amendments
from tests.logs import RIGONLY_LIKE, dumps, records

LEDGER = ("amendments.jsonl", "amendments.jsonl.head")

FOREIGN = """[run]
name = "foreign"

[source]
kind = "jsonl"
eval_every = 10

[verdict]
metric = "eval/chunk_mae"
anchor_step = 30
endpoint_step = 60
healthy_max = 0.3
drift_min = 1.0
"""


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def write_log(folder: RunFolder, upto: int, t0: float | None) -> None:
    """The fixture run cut at `upto` (its end kept at 1000); `t0` None: no `time` on any line."""
    recs = [r for r in records(RIGONLY_LIKE) if r["step"] <= upto]
    if t0 is None:
        recs = [{k: v for k, v in r.items() if k != "time"} for r in recs]
    else:
        first = recs[0]["time"]
        recs = [{**r, "time": t0 + (r["time"] - first)} for r in recs]
    folder.log.write_text("".join(dumps(r) + "\n" for r in recs))


def stale_copy(tmp_path: Path, t0: float | None) -> RunFolder:
    """A finished run (step 1000) whose ledger was declared in a copy made at step 300.

    The copy's extend to 1250 says it saw step 300; the run's log had long passed its
    endpoint (1000) when the ledger was carried back."""
    tmp_path.mkdir(exist_ok=True)
    run = RunFolder(tmp_path / "run")
    run.root.mkdir()
    freeze(run, load_preset(without_amendments(tmp_path)), ["engine"], "h")
    write_log(run, 300, t0)
    copy = RunFolder(tmp_path / "copy")
    shutil.copytree(run.root, copy.root)
    write_log(run, 1000, t0)
    done = cli("amend", str(copy.root), "--extend-to", "1250")
    assert done.returncode == 0, done.stderr
    assert "last step seen 300" in done.stdout
    for name in LEDGER:
        shutil.copy(copy.root / name, run.root / name)
    return run


def read(run: Path) -> dict:
    done = cli("verdict", str(run), "--json")
    assert done.returncode != 2 and "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)


def test_a_stale_copied_extend_is_refused_whether_or_not_the_log_has_times(tmp_path):
    timed = read(stale_copy(tmp_path / "timed", time.time() - 3600).root)
    [check] = timed["amendments"]
    assert check["status"] == "refused" and "the log's own clock had passed" in check["reason"]
    untimed = read(stale_copy(tmp_path / "untimed", None).root)
    [check] = untimed["amendments"]
    assert check["status"] == "refused", check
    reason = check["reason"]
    assert "\n" not in reason
    assert "train_log.jsonl line" in reason and "with no `time`" in reason, reason
    assert "step 1000 (the endpoint in force)" in reason, reason
    # the read is the same as with the clock: the endpoint stays 1000
    assert untimed["label"] == timed["label"]
    assert untimed["read_step"] == timed["read_step"] == 1000


def test_an_extend_declared_before_the_untimed_log_reached_its_step_counts_until_then(
    tmp_path,
):
    # declared in the run itself at step 300: the log shows no probe at the endpoint yet
    run = stale_copy(tmp_path, None)
    write_log(run, 300, None)
    [check] = read(run.root)["amendments"]
    assert check["status"] == "applied", check


def test_another_trainers_log_without_times_keeps_its_amendments(tmp_path):
    # a JSONL log records no time: an extend declared at step 20 still counts at step 60
    root = tmp_path / "run"
    root.mkdir()
    preset = tmp_path / "foreign.toml"
    preset.write_text(FOREIGN)
    freeze(RunFolder(root), load_preset(preset), ["trainer"], "h")

    def log(upto: int) -> None:
        with open(root / "log.jsonl", "w") as f:
            for step in range(1, upto + 1):
                f.write(json.dumps({"step": step, "train/loss": 1.0 / step}) + "\n")
                if step % 10 == 0:
                    f.write(json.dumps({"step": step, "eval/chunk_mae": 3.0 - step / 100}) + "\n")

    log(20)
    done = cli("amend", str(root), "--extend-to", "90")
    assert done.returncode == 0, done.stderr
    log(60)
    [check] = read(root)["amendments"]
    assert check["status"] == "applied", check
