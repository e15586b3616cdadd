"""The events panel claims no "no checkpoint or resume yet" for a run another trainer writes:
its log records no checkpoint, so the panel says what it read and what it cannot know."""

from __future__ import annotations

from fontaine_tui.widgets.events_panel import EventsPanel
from tests.console.conftest import SIZE, loaded, text
from tests.console.test_foreign_console import app_on, copy, done, no_user_config  # noqa: F401
from tests.foreign_writers import T0


async def test_a_foreign_run_says_its_checkpoints_are_not_known(done, tmp_path):  # noqa: F811
    folder, preset = copy(done[0], tmp_path), done[1]
    app = app_on(folder, preset, T0 + 3600)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 80)
        said = text(app.screen.query_one(EventsPanel))
    assert "yet" not in said, said
    assert said == (
        "no resume in its tensorboard log; it records no checkpoint (not known here)"
    ), said
