"""`fontaine-tui attach --latest`: the most recently launched registered run, said in one line.

Real run folders in a real registry; `attach --latest --plain --until-end` in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fontaine_tui.commands.attach import latest_target
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.verdict import prereg
from fontaine_tui.core.verdict.record import EXIT_CODES
from tests.logs import records_upto, write_log


def _run(root: Path, upto: int) -> Path:
    root.mkdir()
    prereg.freeze(RunFolder(root), load_preset("demosonly_1gpu"), ["python"], "h")
    write_log(root / "train_log.jsonl", records_upto(upto))
    return root


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ},
    )


def test_attach_latest_follows_the_newest_launch_and_says_which(tmp_path, registry_path):
    reg = Registry(registry_path)
    newer, older = _run(tmp_path / "newer", 1000), _run(tmp_path / "older", 600)
    # the newer launch is registered first: the launch time picks, not the registry's order
    for name, folder, when in (
        ("newer", newer, "2026-12-06T10:00:00.000000Z"),
        ("older", older, "2026-12-06T09:00:00.000000Z"),
    ):
        reg.upsert(Entry(name=name, run_dir=str(folder), host=hostname(), launched_at=when))
    res = cli(tmp_path, "attach", "--latest", "--plain", "--until-end")
    lines = res.stdout.splitlines()
    assert lines[0] == f"attaching to newer at {newer} (launched 2026-12-06T10:00:00.000000Z)"
    # the verdict's code (model/plain.py, as `verdict` exits); the older run is not followed
    assert "verdict: AMBIGUOUS (final, step 1000" in res.stdout, res.stdout[-500:] + res.stderr
    assert res.returncode == EXIT_CODES["AMBIGUOUS"] and str(older) not in res.stdout


def test_attach_latest_names_another_hosts_run_as_ssh_takes_it(registry_path):
    reg = Registry(registry_path)
    reg.upsert(Entry(name="a", run_dir="/r/a", host="me@gpu1", launched_at="2026-01-02"))
    reg.upsert(Entry(name="b", run_dir="/r/b", host="ssh://gpu2:2222", launched_at="2026-01-01"))
    assert latest_target(reg)[0] == "me@gpu1:/r/a"
    reg.update("/r/b", "ssh://gpu2:2222", launched_at="2026-01-03")
    assert latest_target(reg)[0] == "ssh://gpu2:2222/r/b"


def test_attach_latest_with_no_registered_run_is_one_line_and_exit_2(tmp_path, registry_path):
    res = cli(tmp_path, "attach", "--latest")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip() == (
        f"fontaine-tui: error: --latest: no registered run in {registry_path}"
    )
    both = cli(tmp_path, "attach", "runs/x", "--latest")
    assert both.returncode == 2 and len(both.stderr.strip().splitlines()) == 1
