"""Updates are batched: many batches make one frame; a flood of chart specs few replots."""

from __future__ import annotations

import asyncio

from textual.app import App, ComposeResult

from fontaine_tui.app import CHART_S, FRAME_S
from fontaine_tui.core.charts.chart import ChartSpec, Curve
from fontaine_tui.widgets.chart import Chart
from tests.console.conftest import SIZE, console, loaded, make_run, until


def test_defaults_redraw_a_few_times_a_second_at_most():
    assert 1 / FRAME_S <= 4 and CHART_S >= 1


async def test_batches_within_a_frame_coalesce(tmp_path):
    app = console(make_run(tmp_path / "run"), frame_s=0.3)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await until(pilot, lambda: not app.frame_pending)
        before = app.frames
        for _ in range(200):  # as if 200 batches landed at once
            app.schedule_frame()
        await pilot.pause(0.1)
        assert app.frames == before  # nothing drawn before the frame is due
        await asyncio.sleep(0.4)
        await pilot.pause()
        assert app.frames == before + 1


class ChartApp(App):
    def compose(self) -> ComposeResult:
        yield Chart(id="c", min_interval=0.5)


def spec(n: int) -> ChartSpec:
    return ChartSpec(f"spec {n}", "x", "y", (Curve("c", (0.0, 1.0), (0.0, float(n)), "cyan"),))


async def test_chart_replots_at_most_once_per_interval_and_shows_the_last():
    app = ChartApp()
    async with app.run_test(size=(80, 24)) as pilot:
        chart = app.query_one(Chart)
        start = chart.replots
        for n in range(100):
            chart.show(spec(n), key=n)
            await asyncio.sleep(0.005)
        assert chart.replots - start <= 2  # the first at once, the rest wait their turn
        await asyncio.sleep(0.6)
        await pilot.pause()
        assert chart.spec.title == "spec 99" and not chart.pending
        replots = chart.replots
        chart.show(spec(99), key=99)  # same key: nothing to do
        assert chart.replots == replots and not chart.pending
