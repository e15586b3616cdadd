"""A Lightning run resumed from its checkpoint, its CSVLogger deleting metrics.csv as it
resumes, while the tool follows it: the rows the tool read before the rewrite stay evidence.

The REAL library writes it (tests/writers/lightning_resume.py, Lightning 2.6.6 here): the
resumed run's CSVLogger, given the same version, prints "Experiment logs directory ... exists
and is not empty. Previous log files in this directory will be deleted when the new ones are
saved!" and deletes the first attempt's metrics.csv, then writes rows from the checkpoint's
step onward. The follower keeps the rows it had read in the run folder's kept/ (a launched
run's folder: its prereg.json), and `verdict` then reads the same label and values as the run
trained straight through, the resume counted; never a read of the second half alone. A run
nobody followed, launched --detach and resumed with `launch --resume`, reads the same: the
resume keeps the first attempt's rows before the trainer starts."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.model import seal as sealing
from tests.writers import common

pytest.importorskip("lightning")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
FIRST_STOP = 6  # the first attempt's last step is 5; its checkpoint is at step 4
ANCHOR, ENDPOINT = common.ANCHOR - 1, common.ENDPOINT - 1  # Lightning counts steps from 0
PRESET = f"""[run]
name = "lightning_resume"
[source]
kind = "csv"
path = "csv/metrics.csv"
[verdict]
metric = "val_loss"
anchor_step = {ANCHOR}
endpoint_step = {ENDPOINT}
healthy_max = 0.05
drift_min = 0.5
"""


def _writer(out: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.writers.lightning_resume", str(out), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _ended(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 0, out[-3000:]
    return out


def _verdict(folder: Path, *args: str) -> dict:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(["verdict", str(folder), "--json", *args])
    return json.loads(buf.getvalue())


async def _follow_both_attempts(folder: Path) -> tuple[RunStore, str]:
    """Follow metrics.csv while the first attempt runs to FIRST_STOP and the second resumes."""
    store = RunStore()
    run = ForeignRun(folder, SourceSpec("csv", path="csv/metrics.csv"), poll_s=0.05)

    async def take() -> None:
        async for batch in run.follow():
            for rec in batch.records:
                store.add(rec)

    task = asyncio.create_task(take())
    try:
        first = _writer(folder, "--steps", str(FIRST_STOP))
        await asyncio.to_thread(_ended, first)
        deadline = time.monotonic() + 30
        while not store.steps or store.steps[-1] < FIRST_STOP - 1:  # the tool saw them all
            assert time.monotonic() < deadline, list(store.steps)
            await asyncio.sleep(0.05)
        said = await asyncio.to_thread(_ended, _writer(folder, "--resume"))
        deadline = time.monotonic() + 30
        while ENDPOINT not in store.probes:
            assert time.monotonic() < deadline, sorted(store.probes)
            await asyncio.sleep(0.05)
    finally:
        await run.close()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return store, said


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path, Path, RunStore, str]:
    """The preset, the run trained straight through, the run resumed while followed, the
    follower's store and what the resumed run printed."""
    tmp_path = tmp_path_factory.mktemp("lightning")
    preset_path = tmp_path / "lightning_resume.toml"
    preset_path.write_text(PRESET)
    straight = tmp_path / "straight"
    straight_writer = _writer(straight)  # the same run trained straight through, meanwhile
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    freeze(RunFolder(resumed), load_preset(preset_path), ["lightning_resume"], "host")

    live, said = asyncio.run(_follow_both_attempts(resumed))
    _ended(straight_writer)
    return preset_path, straight, resumed, live, said


def test_rows_read_before_lightning_deletes_metrics_csv_stay_evidence(runs):
    preset_path, straight, resumed, live, said = runs
    assert "Previous log files in this directory will be deleted" in said  # Lightning's word
    text = (resumed / "csv" / "metrics.csv").read_text()
    assert f"0,{ANCHOR}," not in text  # the anchor's probe is gone from the file itself

    want = _verdict(straight, "-p", str(preset_path))
    assert want["label"] == "AMBIGUOUS", want
    got = _verdict(resumed)
    for key in ("label", "anchor_value", "read_value", "delta", "provisional"):
        assert got[key] == want[key], (key, got, want)
    log = got["log"]
    assert log["resumes"] == 1 and log["conflicting_probes"] == [], log
    assert any("metrics.csv was started again" in n for n in log["notices"]), log["notices"]
    # the console's follower read the same: every probe, the resume, no conflict
    assert sorted(live.probes) == [s - 1 for s in common.probe_steps()], sorted(live.probes)
    assert len(live.resumes) == 1 and live.conflicts == [] and live.out_of_order_count == 0
    assert list(live.steps) == list(range(common.STEPS))
    kept = sorted((resumed / "kept").rglob("*"))
    assert [p.name for p in kept if p.is_file()] == ["metrics.csv.1"], kept


def test_a_sealed_bundle_of_the_resumed_run_carries_the_kept_rows_and_verifies(runs, tmp_path):
    preset_path, straight, resumed, _, _ = runs
    sealed = sealing.seal(str(resumed))
    with zipfile.ZipFile(io.BytesIO(sealed.data)) as zf:
        names = set(zf.namelist())
        bundled = json.loads(zf.read("verdict.json"))
    want = _verdict(straight, "-p", str(preset_path))
    assert bundled["label"] == want["label"] == "AMBIGUOUS", bundled
    assert bundled["log"]["resumes"] == 1, bundled["log"]
    path = tmp_path / "resumed.seal.zip"
    path.write_bytes(sealed.data)
    verified = sealing.verify(str(path))  # the verdict recomputed from the bundle alone
    assert verified.recomputed
    assert {"evidence/kept/csv/metrics.csv.1", "evidence/csv/metrics.csv"} <= names, names


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FONTAINE_NOTIFY"}
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _state(cwd: Path, name: str) -> str:
    res = _cli(cwd, "runs", "--json")
    rows = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    return next(r for r in rows if r.get("name") == name)["state"]


@pytest.mark.parametrize("how", ["--detach", "--plain"])
def test_a_detached_run_resumed_by_launch_keeps_the_rows_nobody_followed(
    how, runs, tmp_path, registry_path
):
    """`launch --detach` runs the first attempt to FIRST_STOP, nobody following; `launch
    --resume` (detached again, or --plain) resumes it from its checkpoint, and Lightning
    deletes metrics.csv as it starts. The launch kept the file before the trainer started:
    the verdict reads the run as trained straight through, the resume counted, one copy kept
    (--plain's follower, keeping the same rows, writes none again)."""
    preset_path, straight, _, _, _ = runs
    python, writer = json.dumps(sys.executable), '"-m", "tests.writers.lightning_resume"'
    preset = tmp_path / "detached.toml"
    preset.write_text(
        PRESET.replace('name = "lightning_resume"', 'name = "detached"\noutput_dir = "runs/d"')
        + f"""[command]
cwd = {json.dumps(str(ROOT))}
argv = [{python}, {writer}, "{{output_dir}}", "--steps", "{FIRST_STOP}"]
resume_argv = [{python}, {writer}, "{{output_dir}}", "--resume"]
"""
    )
    res = _cli(tmp_path, "launch", str(preset), "--detach")
    assert res.returncode == 0, res.stdout + res.stderr
    folder = tmp_path / "runs" / "d"
    deadline = time.monotonic() + 180  # the first attempt ends on its own at FIRST_STOP
    while _state(tmp_path, "detached") == "running":
        assert time.monotonic() < deadline, (folder / "engine.out.log").read_text()[-3000:]
        time.sleep(0.5)
    assert (folder / "ckpt" / "last.ckpt").is_file()
    assert f"0,{ANCHOR}," in (folder / "csv" / "metrics.csv").read_text()
    assert not (folder / "kept").exists()  # nobody followed it

    res = _cli(tmp_path, "launch", str(preset), "--resume", how, "--poll", "0.2")
    ok = res.returncode == 0 if how == "--detach" else "exit 0" in res.stdout  # its end said
    assert ok, (res.stdout + res.stderr)[-3000:]
    while _state(tmp_path, "detached") == "running":  # --detach: nobody follows it again
        assert time.monotonic() < deadline + 180, (folder / "engine.out.log").read_text()[-3000:]
        time.sleep(0.5)
    said = (folder / "engine.out.log").read_text()
    assert "Previous log files in this directory will be deleted" in said, said[-3000:]
    assert f"0,{ANCHOR}," not in (folder / "csv" / "metrics.csv").read_text()  # gone

    want = _verdict(straight, "-p", str(preset_path))
    got = _verdict(folder)
    for key in ("label", "anchor_value", "read_value", "delta", "provisional"):
        assert got[key] == want[key], (key, got, want)
    log = got["log"]
    assert log["resumes"] == 1 and log["conflicting_probes"] == [], log
    assert any("metrics.csv was started again" in n for n in log["notices"]), log["notices"]
    kept = [p.relative_to(folder).as_posix() for p in (folder / "kept").rglob("*") if p.is_file()]
    assert kept == ["kept/csv/metrics.csv.1"], kept
