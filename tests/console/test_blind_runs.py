"""The viewer's --blind in the runs mode: the run's row shows no read while it is hidden.

A real run folder cut at step 750 of 1000, frozen from demosonly_1gpu without `blind`, is
registered on this host and followed with the console opened as `attach RUN --blind` opens
it. The runs mode (r) checks every registered run as `fontaine-tui runs` does (the fleet's
look, here a real `sh`); the row keeps the run's health (its step) and says BLINDED in place
of the probe's value and the read's class. Opened without --blind, the same row shows them."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from fontaine_tui.console import make_app
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runs.fleet import Fleet
from fontaine_tui.core.runs.registry import Entry, Registry
from tests.commands.test_blind import SECRETS, blind_preset, run_folder
from tests.console.conftest import SIZE, fixed_clock, until


def screen_text(app) -> str:
    return "\n".join(
        str(w.render()) for w in app.screen.query("*") if w.display and hasattr(w, "render")
    )


async def runs_row(tmp_path: Path, blind: bool) -> tuple[dict[str, str], str, list[str]]:
    """The run's row in the runs mode (column -> text), the screen's text and the toasts."""
    root = run_folder(tmp_path, 750, blind=False)  # the preset does not blind the run
    preset = load_preset(blind_preset(tmp_path, blind=False))
    reg = Registry(tmp_path / "state" / "babysit.toml")
    reg.upsert(Entry(name="cut", run_dir=str(root), host=hostname(), preset=preset.name))
    app = make_app(
        source=LocalRun(root),
        preset=preset,
        clock=fixed_clock,
        registry=reg,
        kind="attach",
        folder=root,
        fleet=Fleet(tmp_path / "state" / "fleet.json", None, hostname()),
        blind=blind,
    )
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.session.store.last_step == 750, 20)
        await pilot.press("r")
        table = app.screen.query_one(DataTable)

        def row() -> list[str]:
            rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
            return next((r for r in rows if r[0] == "cut"), [])

        await until(pilot, lambda: "750/1000" in " ".join(row()), 20)
        cols = [str(c.label) for c in table.columns.values()]
        toasts = [str(n.message) for n in app._notifications]
        return dict(zip(cols, row(), strict=True)), screen_text(app), toasts


async def test_the_viewers_blind_hides_the_runs_row_read(tmp_path):
    row, shown, toasts = await runs_row(tmp_path, blind=True)
    assert row["step"] == "750/1000"  # health stays
    assert row["read"] == "PROVISIONAL BLINDED", row
    assert row["probe"] == "750:-", row
    for secret in SECRETS:
        assert secret not in " ".join(row.values()), (secret, row)
        assert secret not in shown, secret
        assert not any(secret in t for t in toasts), (secret, toasts)


async def test_without_the_blind_the_runs_row_shows_the_read(tmp_path):
    row, _, _ = await runs_row(tmp_path, blind=False)
    assert row["probe"].startswith("750:") and row["probe"] != "750:-", row
    assert row["read"].startswith("PROVISIONAL ") and "BLINDED" not in row["read"], row
    assert any(secret in row["read"] for secret in SECRETS), row
