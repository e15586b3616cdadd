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
from fontaine_tui.core.launch.registry import Registry
from fontaine_tui.core.preset.find import load_preset
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
