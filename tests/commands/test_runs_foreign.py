"""`fontaine-tui runs` (the real CLI, a subprocess) on attached runs another trainer writes
(torch's SummaryWriter): alive while its files are being written, with its step and read;
ended once its final read is in; quiet, not an exit, when it stops writing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from fontaine_tui.commands.attach import remember
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runs.registry import Registry
from tests.core.log.formats.conftest import foreign_preset
from tests.foreign_writers import write_tb


def runs(*args: str) -> list[dict]:
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "runs", "--json", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )
    assert res.returncode == 0, res.stderr
    return [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]


def test_attached_foreign_runs_read_alive_ended_and_quiet(tmp_path, registry_path):
    start = time.time() - 100
    live = write_tb(tmp_path / "live", 60, t0=start)  # its endpoint (80) not reached yet
    done = write_tb(tmp_path / "done", 80, t0=start)
    preset = load_preset(str(foreign_preset(tmp_path, 'kind = "tensorboard"')))
    for folder in (live, done):
        remember(str(folder), preset, "attach")  # as `fontaine-tui attach` registers it
    rows = {r["run_dir"]: r for r in runs()}
    row = rows[str(live)]
    assert (row["state"], row["step"], row["steps"]) == ("running", 60, 80)
    assert row["probe_step"] == 60 and row["read"].startswith("PROVISIONAL ")
    assert row["warnings"] == []  # no false alert: none of the engine's columns
    row = rows[str(done)]
    assert (row["state"], row["step"], row["probe_step"]) == ("ended", 80, 80)
    assert not row["read"].startswith("PROVISIONAL")

    # the live run stops writing, an hour ago: quiet, and `--update` records no exit
    old = time.time() - 3600
    for f in live.iterdir():
        os.utime(f, (old, old))
    rows = {r["run_dir"]: r for r in runs("--update")}
    assert rows[str(live)]["state"] == "quiet"
    assert "not written for" in rows[str(live)]["detail"]
    entry = Registry(registry_path).find(str(live), rows[str(live)]["host"])
    assert entry is not None and entry.status == "attached"


def test_the_table_shows_the_step_and_state(tmp_path, registry_path):
    folder = write_tb(tmp_path / "live", 60, t0=time.time() - 100)
    remember(
        str(folder), load_preset(str(foreign_preset(tmp_path, 'kind = "tensorboard"'))), "attach"
    )
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "runs"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )
    (line,) = [x for x in res.stdout.splitlines() if str(folder) in x]
    cells = line.split()
    assert cells[2:4] == ["running", "60/80"], line


def test_attach_until_end_stops_once_a_foreign_runs_final_read_is_in(tmp_path, registry_path):
    done = write_tb(tmp_path / "done", 80)
    preset = foreign_preset(tmp_path, 'kind = "tensorboard"')
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "fontaine_tui",
            "attach",
            str(done),
            "--preset",
            str(preset),
            "--plain",
            "--until-end",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ},
    )
    assert res.returncode == 4, res.stderr  # the verdict's code: AMBIGUOUS
    lines = res.stdout.splitlines()
    assert lines[-1].startswith("verdict: AMBIGUOUS") and "step 80" in lines[-1], lines[-3:]
    assert "PROVISIONAL" not in lines[-1]


JSONL_PRESET = """[run]
name = "fj"
question = "Does eval_loss rise after step 100?"

[source]
kind = "jsonl"
path = "metrics.jsonl"
eval = ["eval_loss"]
step = "step"
time = "time"
eval_every = 50

[verdict]
metric = "eval_loss"
anchor_step = 100
endpoint_step = 200
healthy_max = 0.0
drift_min = 0.2
"""


def _metrics(t0: float, steps: range) -> str:
    return "".join(
        json.dumps({"step": s, "time": t0 + s, "eval_loss": 1.0 + s / 1000}) + "\n"
        for s in steps
        if s % 50 == 0
    )


def test_a_foreign_runs_read_in_the_runs_list_keeps_its_ledger(tmp_path, registry_path):
    """A frozen [source] run whose endpoint an extend moved: `runs` reads it as `verdict`
    does, PROVISIONAL before the new endpoint (it read the frozen preset alone, final)."""
    from fontaine_tui.core.runfolder import RunFolder
    from fontaine_tui.core.verdict.prereg import freeze

    preset_path = tmp_path / "p.toml"
    preset_path.write_text(JSONL_PRESET)
    preset = load_preset(str(preset_path))
    root = tmp_path / "run"
    root.mkdir()
    freeze(RunFolder(root), preset, ["python", "train.py"], "test-host")
    t0 = time.time() - 150  # step 150 logged before the amendment, the rest after it
    (root / "metrics.jsonl").write_text(_metrics(t0, range(1, 151)))
    amend = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "amend", str(root), "--extend-to", "300"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert amend.returncode == 0, amend.stdout + amend.stderr
    with (root / "metrics.jsonl").open("a") as fh:
        fh.write(_metrics(time.time() + 10, range(151, 201)))
    verdict = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "verdict", str(root), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    doc = json.loads(verdict.stdout)
    assert doc["provisional"] and doc["endpoint_step"] == 300, verdict.stderr
    remember(str(root), preset, "attach")
    [row] = [r for r in runs() if r["run_dir"] == str(root)]
    assert row["read"] == f"PROVISIONAL {doc['verdict']}", row
