"""The follower's waiting note in the warnings panel: said while a foreign run's files are not
there, and gone once its records arrive (issue 44)."""

from __future__ import annotations

import threading
import time

import pytest

from fontaine_tui.console import make_app
from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.widgets.warnings_panel import WarningsPanel
from tests.console.conftest import SIZE, loaded, text, until
from tests.core.log.formats.conftest import foreign_preset
from tests.foreign_writers import T0, write_tb


@pytest.fixture(autouse=True)
def no_user_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)


async def test_a_waiting_note_is_gone_once_the_runs_records_arrive(tmp_path):
    pytest.importorskip("tensorboard")
    preset = load_preset(str(foreign_preset(tmp_path, 'kind = "tensorboard"')))
    folder = tmp_path / "run"
    folder.mkdir()
    go = threading.Event()

    def later() -> None:  # torch's SummaryWriter begins the run once the console waits
        go.wait(10)
        time.sleep(0.2)
        write_tb(folder, 75)

    writer = threading.Thread(target=later)
    writer.start()
    app = make_app(
        source=ForeignRun(folder, SourceSpec("tensorboard"), poll_s=0.05),
        preset=preset,
        clock=lambda: T0 + 80,
        kind="attach",
        frame_s=0.05,
    )
    try:
        async with app.run_test(size=SIZE) as pilot:
            panel = app.screen.query_one(WarningsPanel)
            await until(pilot, lambda: "follower: waiting" in text(panel))
            assert not app.session.store.steps
            go.set()
            await loaded(pilot, 75)
            await pilot.pause(0.3)
            shown = text(panel)
            assert "waiting" not in shown, shown
            assert app.view is not None and "waiting" not in app.view.note
    finally:
        go.set()
        writer.join()
