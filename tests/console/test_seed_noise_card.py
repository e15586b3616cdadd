"""The verdict screen says where the read lies against the seed-noise floor."""

from __future__ import annotations

import pytest

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.widgets.verdict_panel import LedgerPanel, VerdictBanner
from tests.commands.test_seed_noise import bank_seeds, seed_preset
from tests.console.conftest import SIZE, console, loaded, make_run, text, until


@pytest.fixture
def seeded(tmp_path):
    """The preset with three banked seeds (banked outside the test's event loop)."""
    return load_preset(seed_preset(tmp_path, bank_seeds(tmp_path)))


async def test_the_verdict_screen_shows_the_seed_noise_line(tmp_path, seeded):
    preset = seeded
    log = make_run(tmp_path / "run")  # delta 0.6929, AMBIGUOUS
    app = console(log, preset=preset)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await pilot.press("v")
        await pilot.pause()
        panel = app.screen.query_one(LedgerPanel)
        await until(pilot, lambda: "seed noise:" in text(panel.query_one("#ledger")))
        shown = " ".join(text(panel.query_one("#ledger")).split())
        assert (
            "seed noise: delta 0.6929 is outside the seed noise of ref-seeds "
            "(0.1 ± 0.3 at step 1000, 3 seeds: range -0.2..0.4)" in shown
        )
        assert "WARNING: verdict.healthy_max 0.3 is inside the seed noise of ref-seeds" in shown
        assert text(app.screen.query_one(VerdictBanner)).startswith("AMBIGUOUS")
