"""A mode switch draws the new mode at once: its screen composed ahead, its footer not rebuilt.

The real replay of a run in the console. Every mode is composed in the background after the
console starts (`modes_warm`), so a mode's first key composes nothing; a footer rebuilds its
keys only when the keys it shows change (the unblind key going once the read is shown), not on
every switch, as Textual's own Footer does."""

from __future__ import annotations

from textual.widgets._footer import FooterKey

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.screens.base import ConsoleScreen
from fontaine_tui.screens.modes import MODES
from fontaine_tui.widgets.keys_footer import KeysFooter
from tests.commands.test_blind import blind_preset
from tests.console.conftest import SIZE, console, loaded, make_run, until


def footer_keys(app) -> list[FooterKey]:
    return list(app.screen.query_one(KeysFooter).query(FooterKey))


async def test_every_mode_is_composed_before_its_first_key(tmp_path, monkeypatch):
    composed: list[str] = []
    for screen in MODES.values():
        if issubclass(screen, ConsoleScreen):
            own = screen.compose

            def spied(self, own=own):
                composed.append(type(self).__name__)
                return own(self)

            monkeypatch.setattr(screen, "compose", spied)
    app = console(make_run(tmp_path / "run"))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await until(pilot, lambda: app.modes_warm)
        before = sorted(composed)
        assert before == sorted(s.__name__ for s in MODES.values() if issubclass(s, ConsoleScreen))
        for key in ("p", "v", "r", "b", "t", "m"):
            await pilot.press(key)
            await pilot.pause()
        assert sorted(composed) == before  # no key composed a screen


async def test_a_switch_keeps_the_footers_keys_until_they_change(tmp_path, monkeypatch):
    monkeypatch.setenv("FONTAINE_USER", "carol")
    folder = tmp_path / "run"
    app = console(make_run(folder, upto=750), preset=load_preset(blind_preset(tmp_path)))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 750)
        await pilot.press("v")
        await pilot.pause()
        keys = footer_keys(app)
        assert "app.unblind" in [k.action for k in keys]
        for key in ("p", "m", "v"):
            await pilot.press(key)
            await pilot.pause()
        assert footer_keys(app) == keys  # the same widgets: not rebuilt on a switch

        await pilot.press("u")
        await pilot.pause()
        await pilot.press(*"sponsor asked", "enter")
        await until(pilot, lambda: "app.unblind" not in [k.action for k in footer_keys(app)])
        assert [k.action for k in footer_keys(app) if k.action != "app.unblind"] == [
            k.action for k in keys if k.action != "app.unblind"
        ]
