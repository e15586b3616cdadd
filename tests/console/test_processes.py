"""Processes mode: a launched run's tree, a signal to one member, a member's stacks."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from fontaine_tui.console import make_app
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.host.nvml import read_gpus
from fontaine_tui.core.host.proctree import Member, ProcTree
from fontaine_tui.core.host.stacks import py_spy
from fontaine_tui.core.run.launcher import EngineProcess
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.screens.processes import ProcessesScreen
from fontaine_tui.screens.signal_dialog import SignalDialog
from fontaine_tui.widgets.process_table import ProcessTable, StackPane
from tests.console.conftest import SIZE, fixed_clock, loaded, make_run, text, until

# the engine starts one rank (RANK=0, as torchrun does), which records each SIGUSR1 it gets
ENGINE = """
import os, subprocess, sys
subprocess.Popen([sys.executable, sys.argv[0], "rank"], env={**os.environ, "RANK": "0"}).wait()
"""
RANK = """
import signal, time
def got(signum, frame):
    with open("signals.txt", "a") as fh:
        fh.write(signal.Signals(signum).name + "\\n")
signal.signal(signal.SIGUSR1, got)
def wait_for_batches():
    while True:
        time.sleep(0.1)
wait_for_batches()
"""


@pytest.fixture
def launched(tmp_path):
    """A run folder at step 600 and its engine: a parent and one rank, started here."""
    folder = tmp_path / "run"
    make_run(folder, upto=600)
    script = folder / "engine.py"
    script.write_text(
        f"import sys\nif sys.argv[1:] == ['rank']:\n{_indent(RANK)}\nelse:\n{_indent(ENGINE)}\n"
    )
    engine = EngineProcess.start([sys.executable, str(script)], RunFolder(folder), cwd=folder)
    yield folder, engine
    engine.signal_group(signal.SIGKILL)
    engine.wait(10)


def _indent(code: str) -> str:
    return "\n".join("    " + line if line else "" for line in code.strip().splitlines())


def _app(folder, engine, preset, kind=None):
    return make_app(
        source=LocalRun(folder), preset=preset, process=engine, clock=fixed_clock, kind=kind
    )


async def _tree_shown(pilot, members: int = 2) -> ProcessesScreen:
    await pilot.press("t")
    await until(pilot, lambda: isinstance(pilot.app.screen, ProcessesScreen))
    screen = pilot.app.screen
    await until(
        pilot, lambda: screen.proc_tree is not None and len(screen.proc_tree.members) >= members, 20
    )
    await pilot.pause()
    return screen


async def _select_rank(pilot, screen: ProcessesScreen) -> Member:
    table = screen.query_one(ProcessTable)
    rank = next(m for m in screen.proc_tree.members if m.role == "rank 0")
    await until(pilot, lambda: table.row_count >= 2)
    table.move_cursor(row=[m.pid for m in screen.proc_tree.members].index(rank.pid))
    await pilot.pause()
    selected = screen.selected()  # the tree may be looked at again meanwhile: its CPU % moves
    assert selected is not None and selected.pid == rank.pid
    return rank


async def test_the_tree_of_a_launched_run_and_a_signal_to_a_rank(launched, preset):
    folder, engine = launched
    app = _app(folder, engine, preset)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 600)
        screen = await _tree_shown(pilot)
        table = screen.query_one(ProcessTable)
        cells = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert cells[0][:2] == [str(engine.pid), "engine (python)"]
        assert cells[1][1].strip().startswith("└ rank 0")
        heading = text(screen.query_one("#processes-title"))
        assert f"engine pid {engine.pid}: 2 process(es)" in heading
        assert "launched by this console" in heading
        if read_gpus(None)[0] is None:  # on a host without a GPU, said once in the heading
            assert "no GPU (NVML: " in heading
        rank = await _select_rank(pilot, screen)
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, SignalDialog))
        await pilot.press("4")  # SIGUSR1
        await pilot.pause()
        assert "Send SIGUSR1 to pid" in text(app.screen.query_one("#signal-ask"))
        await pilot.press("y")
        record = folder / "signals.txt"
        await until(pilot, lambda: record.exists() and record.read_text() == "SIGUSR1\n")
        assert app.screen is screen
        assert screen.proc_tree.member(rank.pid) is not None  # SIGUSR1 is handled: it lives on
        await pilot.press("k", "escape")  # cancelled: nothing sent
        await pilot.pause()
        assert record.read_text() == "SIGUSR1\n"


async def test_an_attached_run_is_shown_but_never_signalled(launched, preset):
    folder, engine = launched
    app = _app(folder, engine, preset, kind="attach")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 600)
        screen = await _tree_shown(pilot)
        assert "read-only" in text(screen.query_one("#processes-title"))
        await _select_rank(pilot, screen)
        await pilot.press("k")
        await pilot.pause()
        assert not isinstance(app.screen, SignalDialog)
        assert not (folder / "signals.txt").exists()


@pytest.mark.skipif(py_spy() is None, reason="py-spy is not installed (pip install py-spy)")
async def test_the_stack_pane_shows_py_spy_dump(launched, preset):
    folder, engine = launched
    app = _app(folder, engine, preset)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 600)
        screen = await _tree_shown(pilot)
        rank = await _select_rank(pilot, screen)
        await pilot.press("d")
        pane = screen.query_one(StackPane)
        shown = pane.query_one("#stack-text")
        await until(pilot, lambda: "dumping" not in text(shown), 30)
        if "permit" in text(shown).lower() or "ptrace" in text(shown).lower():
            pytest.skip(f"ptrace refused here: {text(shown).splitlines()[0]}")
        assert pane.display and f"py-spy dump --pid {rank.pid}" in str(pane.border_title)
        assert "wait_for_batches" in text(shown)
        await pilot.press("x")
        await pilot.pause()
        assert not pane.display


FIXED = ProcTree(
    4242,
    (
        Member(
            4242,
            1,
            0,
            1.0,
            "torchrun",
            "torchrun",
            "sleeping",
            0.4,
            310 << 20,
            5,
            ("python", "-m", "torch.distributed.run", "--nproc-per-node=2", "train.py"),
        ),
        Member(
            4250,
            4242,
            1,
            2.0,
            "python",
            "rank 0",
            "running",
            98.0,
            2100 << 20,
            38,
            ("python", "train.py", "--lr=3e-4"),
        ),
        Member(
            4260,
            4250,
            2,
            3.0,
            "pt_data_worker",
            "loader worker (rank 0)",
            "sleeping",
            11.0,
            900 << 20,
            4,
            ("python", "train.py", "--lr=3e-4"),
        ),
        Member(
            4251,
            4242,
            1,
            2.0,
            "python",
            "rank 1",
            "disk-sleep",
            97.0,
            2080 << 20,
            38,
            ("python", "train.py", "--lr=3e-4"),
        ),
    ),
    "no GPU (NVML: library not found (no NVIDIA driver on this host))",
)


class _Fixed:
    """A look that always sees FIXED: the snapshot's pids and numbers never move."""

    def look(self, root: int, root_role: str = "engine", gpus=None) -> ProcTree:
        return FIXED


def test_processes_snapshot(snap_compare, monkeypatch, launched, preset):
    folder, engine = launched
    monkeypatch.chdir(folder.parent)
    monkeypatch.setattr("fontaine_tui.screens.processes.TreeLook", _Fixed)  # from the first look
    app = make_app(source=LocalRun(Path("run")), preset=preset, process=engine, clock=fixed_clock)

    async def ready(pilot) -> None:
        await loaded(pilot, 600)
        await pilot.press("t")
        await until(pilot, lambda: getattr(app.screen, "proc_tree", None) is FIXED)
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=SIZE, run_before=ready)
