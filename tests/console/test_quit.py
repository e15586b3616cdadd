"""Quitting with a launched run alive asks: stop it, or detach and leave it running."""

from __future__ import annotations

import sys

import pytest

from fontaine_tui.console import make_app
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.run.launcher import EngineProcess
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.screens.dialogs import QuitDialog
from fontaine_tui.widgets.run_header import RunHeader
from tests.console.conftest import SIZE, fixed_clock, loaded, make_run, text, until

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def _app(folder, process, preset):
    return make_app(source=LocalRun(folder), preset=preset, process=process, clock=fixed_clock)


@pytest.fixture
def live(tmp_path):
    """A run folder at step 600 and a live engine process owned by the test."""
    folder = tmp_path / "run"
    make_run(folder, upto=600)
    engine = EngineProcess.start(SLEEPER, RunFolder(folder))
    yield folder, engine
    engine.signal_group(9)
    engine.wait(10)


async def test_quit_with_live_run_detach_leaves_it_running(live, preset):
    folder, engine = live
    app = _app(folder, engine, preset)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 600)
        assert "RUNNING" in text(app.screen.query_one(RunHeader).query_one("#title"))
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, QuitDialog)
        await pilot.press("escape")  # cancel: still here
        await pilot.pause()
        assert not isinstance(app.screen, QuitDialog) and app.is_running
        await pilot.press("q", "d")
        await pilot.pause()
    assert engine.poll() is None  # detached: the run keeps going


async def test_quit_with_live_run_stop_stops_it(live, preset):
    folder, engine = live
    app = _app(folder, engine, preset)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 600)
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("s")
        await pilot.pause()
    info = engine.wait(15)
    assert info is not None  # stopped


async def test_exited_run_is_shown_and_quit_does_not_ask(tmp_path, preset):
    folder = tmp_path / "run"
    make_run(folder, upto=600)
    engine = EngineProcess.start([sys.executable, "-c", "raise SystemExit(3)"], RunFolder(folder))
    engine.wait(15)
    app = _app(folder, engine, preset)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 600)
        title = app.screen.query_one(RunHeader).query_one("#title")
        await until(pilot, lambda: "FAILED (EXIT 3)" in text(title))
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


async def test_a_telemetry_read_that_ends_after_the_quit_is_dropped(tmp_path, preset):
    """The history reader's worker may finish after the monitor is gone: no crash then."""
    from fontaine_tui.screens.monitor import MonitorScreen

    folder = tmp_path / "run"
    make_run(folder, upto=600)
    app = make_app(source=LocalRun(folder), preset=preset, clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.session.store.last_step == 600)
        monitor = app.screen
        assert isinstance(monitor, MonitorScreen)
        app.exit(0)
        await pilot.pause()
    from textual._context import active_app

    token = active_app.set(app)  # as in the app's worker, which finishes after the quit
    try:
        monitor._on_telemetry(None)  # what the worker does once its read is in
    finally:
        active_app.reset(token)
