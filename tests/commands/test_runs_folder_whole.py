"""`fontaine-tui runs` prints each run's folder whole, however narrow the terminal.

Two runs whose folders differ only by a pid suffix at the end of a long path must read as two
runs: the RUN FOLDER column is the table's last and is never cut, at 80 columns as anywhere
(the terminal wraps the line; nothing is elided). Checked through the real command with
COLUMNS=80 and in a real 80-column terminal (tmux)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.runs.registry import Entry, Registry

TMUX = shutil.which("tmux")
NAME = "grasp_sft_v2_demosonly_1gpu_disc_replicate"


def two_runs(tmp_path: Path) -> tuple[dict[str, str], list[str]]:
    """A registry of two runs whose folders (each over 80 characters) differ at the end only."""
    base = tmp_path / "outputs" / "train" / "a_long_project_folder" / f"{NAME}_seed0"
    folders = [f"{base}_pid41721", f"{base}_pid41722"]
    registry = tmp_path / "state" / "babysit.toml"
    reg = Registry(registry)
    for folder in folders:
        Path(folder).mkdir(parents=True)
        reg.upsert(Entry(name=NAME, run_dir=folder, host=hostname(), pid=0, preset="x"))
    env = {**os.environ, "FONTAINE_REGISTRY": str(registry), "COLUMNS": "80"}
    assert all(len(f) > 80 for f in folders)
    return env, folders


def test_the_run_folder_column_is_whole_at_80_columns(tmp_path: Path) -> None:
    env, folders = two_runs(tmp_path)
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "runs"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert res.returncode == 0, res.stderr
    header, *rows = res.stdout.splitlines()
    assert header.rstrip().endswith("RUN FOLDER"), header
    at = header.index("RUN FOLDER")
    assert sorted(r[at:] for r in rows) == folders, res.stdout  # each row ends with it whole


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_the_run_folder_column_is_whole_in_an_80_column_terminal(tmp_path: Path) -> None:
    env, folders = two_runs(tmp_path)
    sock = f"fontaine-runs-{os.getpid()}"
    done = tmp_path / "done"
    cmd = (
        f"FONTAINE_REGISTRY={shlex.quote(env['FONTAINE_REGISTRY'])} "
        f"{shlex.quote(sys.executable)} -m fontaine_tui runs; touch {shlex.quote(str(done))}; "
        "sleep 60"
    )
    tmux = [TMUX or "tmux", "-L", sock, "-f", "/dev/null"]
    try:
        subprocess.run(
            [*tmux, "new-session", "-d", "-s", "t", "-x", "80", "-y", "40", "-c", str(tmp_path)]
            + [cmd],
            check=True,
            timeout=10,
        )
        deadline = time.monotonic() + 60
        while not done.exists():
            assert time.monotonic() < deadline, "runs did not finish"
            time.sleep(0.2)
        # -J joins the lines the terminal wrapped: each row as the program wrote it
        pane = subprocess.run(
            [*tmux, "capture-pane", "-p", "-J", "-t", "t"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
        width = subprocess.run(
            [*tmux, "display-message", "-p", "-t", "t", "#{pane_width}"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=10)
    assert width == "80"
    rows = [ln.rstrip() for ln in pane.splitlines() if NAME in ln]
    assert sorted(r.rsplit("  ", 1)[-1] for r in rows) == folders, pane
