"""Key bindings: modes, raw / scale-adjusted toggle, stepping through reads, help, palette."""

from __future__ import annotations

from fontaine_tui.screens.help import HelpScreen
from fontaine_tui.screens.monitor import MonitorScreen
from fontaine_tui.screens.probes import ProbesScreen
from fontaine_tui.screens.runs import RunsScreen
from fontaine_tui.screens.verdict import VerdictScreen
from fontaine_tui.widgets.chart import Chart
from fontaine_tui.widgets.verdict_panel import RulesPanel, VerdictBanner
from tests.console.conftest import SIZE, console, loaded, make_run, text
from tests.logs import SCALED_LIKE


async def test_mode_keys_switch_screens(tmp_path):
    app = console(make_run(tmp_path / "run"))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        assert isinstance(app.screen, MonitorScreen)
        for key, screen in (
            ("p", ProbesScreen),
            ("v", VerdictScreen),
            ("r", RunsScreen),
            ("m", MonitorScreen),
        ):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, screen), key
            assert app.current_mode == screen.__name__.removesuffix("Screen").lower()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one("#help-table")
        keys = {str(table.get_row_at(i)[1]) for i in range(table.row_count)}
        assert {"m", "p", "v", "r", "?", "q", "s", "a", "f", "n", "e"} <= keys
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MonitorScreen)


async def test_s_toggles_raw_and_scale_adjusted(tmp_path):
    app = console(make_run(tmp_path / "run", probes=SCALED_LIKE))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await pilot.press("p")
        await pilot.pause()
        chart = app.screen.query_one("#probes-chart", Chart)
        assert "[raw]" in chart.spec.title
        assert [h.y for h in chart.spec.hlines] == [0.30, 1.0158]
        assert "demosonly +2.0317 @ endpoint" in text(chart)
        await pilot.press("s")
        await pilot.pause()
        assert app.scaled is True
        chart = app.screen.query_one("#probes-chart", Chart)
        assert "[scale-adjusted x3.613]" in chart.spec.title
        healthy, drift = (h.y for h in chart.spec.hlines)
        assert round(healthy, 3) == 1.084 and round(drift, 3) == 3.670
        assert "demosonly +2.0317, raw units @ endpoint" in text(chart)  # never multiplied
        await pilot.press("s")
        await pilot.pause()
        assert "[raw]" in app.screen.query_one("#probes-chart", Chart).spec.title


async def test_verdict_steps_through_reads(tmp_path):
    app = console(make_run(tmp_path / "run", probes=SCALED_LIKE))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await pilot.press("v")
        await pilot.pause()
        banner = app.screen.query_one(VerdictBanner)
        assert text(banner).startswith("AMBIGUOUS-BY-INSTRUMENT  [FINAL]")
        rules = app.screen.query_one(RulesPanel)
        assert "SAME-DRIFT" in text(rules.query_one("#raw"))
        assert "AMBIGUOUS" in text(rules.query_one("#scaled"))
        seen = []
        for _ in range(4):
            await pilot.press("left")
            await pilot.pause()
            seen.append((app.read_step, text(banner).split("  ")[0]))
        assert seen == [
            (750, "AMBIGUOUS-BY-INSTRUMENT"),
            (500, "HEALTHY"),
            (250, "UNDECIDABLE"),
            (250, "UNDECIDABLE"),
        ]
        assert "[PROVISIONAL]" in text(banner)
        await pilot.press("right")
        await pilot.pause()
        assert app.read_step == 500
        await pilot.press("l")
        await pilot.pause()
        assert app.read_step is None and "read at step 1000" in text(banner)


async def test_palette_offers_the_actions(tmp_path):
    """Every binding with an id and a tooltip is a palette command of the same name, help
    and action (the palette is built from the bindings, so it cannot drift from them)."""
    app = console(make_run(tmp_path / "run"))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        assert {
            "Monitor (m)",
            "Probes (p)",
            "Verdict (v)",
            "Runs (r)",
            "Help (?)",
            "Raw/scaled (s)",
            "Prev read (left)",
            "Next read (right)",
            "Latest (l)",
            "Accept (a)",
            "Flag (f)",
            "Note (n)",
            "Export (e)",
        } <= set(commands)
        assert commands["Export (e)"].help == "Write verdict.json and the overlay chart image"
        await commands["Raw/scaled (s)"].callback()
        assert app.scaled is True
        await commands["Verdict (v)"].callback()
        await pilot.pause()
        assert app.current_mode == "verdict"


async def test_a_palette_command_of_a_screens_own_key_acts_on_that_screen(tmp_path):
    app = console(make_run(tmp_path / "run", probes=SCALED_LIKE))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        chart = app.screen.query_one("#loss-chart", Chart)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        await commands["Smoother (e)"].callback()
        await pilot.pause(0.2)
        assert chart.spec.title == "training losses  [EMA 0.95, debiased; linear scale]"
        await pilot.press("v")
        await pilot.pause()
        shown = {c.title for c in app.get_system_commands(app.screen)}
        assert "Smoother (e)" not in shown and "Accept (a)" in shown  # the monitor's own key


async def test_e_and_g_change_the_loss_charts_smoothing_and_axis(tmp_path):
    app = console(make_run(tmp_path / "run", probes=SCALED_LIKE))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        chart = app.screen.query_one("#loss-chart", Chart)
        assert chart.spec.title == "training losses  [EMA 0.9, debiased; linear scale]"
        assert "AR CE EMA 0.9" in text(chart) and "AR CE raw" in text(chart)
        await pilot.press("e")
        await pilot.pause(0.2)
        assert chart.spec.title == "training losses  [EMA 0.95, debiased; linear scale]"
        for _ in range(9):  # down past the last step: smoothing off, the raw curves alone
            await pilot.press("E")
        await pilot.pause(0.2)
        assert chart.spec.title == "training losses  [no smoothing; linear scale]"
        assert [c.label for c in chart.spec.curves] == ["AR CE", "flow"]
        await pilot.press("g")
        await pilot.pause(0.2)
        assert chart.spec.ylog and "loss (log scale)" in text(chart)
        await pilot.press("g")
        await pilot.pause(0.2)
        assert not chart.spec.ylog


async def test_d_switches_the_probes_chart_to_the_per_dataset_curves(tmp_path):
    app = console(make_run(tmp_path / "run", probes=SCALED_LIKE))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await pilot.press("p", "d")
        await pilot.pause(0.2)
        chart = app.screen.query_one("#probes-chart", Chart)
        assert chart.spec.title.startswith("per-dataset delta(500->s) by dataset")
        assert {c.label for c in chart.spec.curves} == {"this run demos", "this run rig"}
        assert "this run demos" in text(chart)
        await pilot.press("d")
        await pilot.pause(0.2)
        assert chart.spec.title.startswith("delta(s) = eval_chunk_mae(s)")
