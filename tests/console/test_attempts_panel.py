"""The monitor's attempts timeline: a real process killed by SIGKILL is attempt 1, a resumed
one still alive is attempt 2 (attempts.jsonl written by core/run/attempts.py)."""

from __future__ import annotations

import dataclasses
import os
import signal
import sys

from fontaine_tui.console import make_app
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.preset.recovery import RecoverySpec
from fontaine_tui.core.run import attempts
from fontaine_tui.core.run.launcher import EngineProcess
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.widgets.attempts_panel import AttemptsPanel
from fontaine_tui.widgets.verdict_panel import LedgerPanel
from tests.console.conftest import SIZE, fixed_clock, loaded, make_run, text, until

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


async def test_attempts_are_a_timeline_on_the_monitor(tmp_path, preset):
    root = tmp_path / "run"
    make_run(root, upto=600)
    folder = RunFolder(root)
    first = EngineProcess.start(SLEEPER, folder)
    n1 = attempts.begin(folder, "launch", first, hostname())
    os.killpg(first.pid, signal.SIGKILL)  # from outside, not the console's stop
    attempts.end(folder, n1, first.wait(10))
    second = EngineProcess.start(SLEEPER, folder)
    attempts.begin(folder, "resume", second, hostname())
    try:
        app = make_app(source=LocalRun(root), preset=preset, process=second, clock=fixed_clock)
        async with app.run_test(size=SIZE) as pilot:
            await loaded(pilot, 600)
            panel = app.screen.query_one(AttemptsPanel)
            await until(pilot, lambda: panel.display and "#2" in text(panel))
            shown = text(panel)
            assert panel.border_title == "attempts (2)"
            assert "#1 launch " in shown and "→ killed" in shown
            assert "SIGKILL from outside the program" in shown
            assert "#2 resume " in shown and "→ running" in shown
    finally:
        second.signal_group(signal.SIGKILL)
        second.wait(10)


async def test_no_attempts_no_panel(tmp_path, preset):
    root = tmp_path / "run"
    make_run(root, upto=600)
    app = make_app(source=LocalRun(root), preset=preset, clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 600)
        assert not app.screen.query_one(AttemptsPanel).display


async def test_a_restart_and_the_recovery_contract_are_shown(tmp_path, preset):
    """A resume [recovery] made: the timeline names it, the ledger says the contract and use."""
    root = tmp_path / "run"
    make_run(root, upto=600)
    folder = RunFolder(root)
    first = EngineProcess.start(SLEEPER, folder)
    n1 = attempts.begin(folder, "launch", first, hostname())
    os.killpg(first.pid, signal.SIGKILL)
    attempts.end(folder, n1, first.wait(10))
    second = EngineProcess.start(SLEEPER, folder)
    attempts.begin(folder, "resume", second, hostname(), restart=(1, 3, "preemption"))
    contracted = dataclasses.replace(preset, recovery=RecoverySpec(3, ("preemption", "oom")))
    try:
        app = make_app(source=LocalRun(root), preset=contracted, process=second, clock=fixed_clock)
        async with app.run_test(size=SIZE) as pilot:
            await loaded(pilot, 600)
            panel = app.screen.query_one(AttemptsPanel)
            await until(pilot, lambda: panel.display and "#2" in text(panel))
            assert "#2 restart 1/3 " in text(panel) and "→ running" in text(panel)
            await pilot.press("v")
            ledger = app.screen.query_one(LedgerPanel).query_one("#ledger")
            await until(pilot, lambda: "recovery:" in text(ledger))
            assert (
                "recovery: up to 3 restarts on preemption, oom; 1 used (attempt 2 after "
                "preemption)" in text(ledger)
            )
    finally:
        second.signal_group(signal.SIGKILL)
        second.wait(10)
