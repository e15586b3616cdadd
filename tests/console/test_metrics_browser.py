"""The metric browser (`b`): every numeric field a chart, a regex filter, a chart full size."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from fontaine_tui.screens.metrics import MetricsScreen
from fontaine_tui.widgets.chart import Chart
from fontaine_tui.widgets.metric_grid import MetricCell
from tests.console.conftest import SIZE, console, loaded, text, until
from tests.logs import SCALED_LIKE, records_upto, write_log

EXTRA = ("opt.lr_head", "tokens_per_s", "gpu/mem_gb")


def browser_run(folder: Path, upto: int = 1000) -> Path:
    """The fixture run, its train lines carrying more numbers (nested, NaN) than the columns."""
    recs = records_upto(upto, SCALED_LIKE)
    for r in recs:
        if r["kind"] == "train":
            s = r["step"]
            r["opt"] = {"lr_head": 1e-4 * (1 + s / 1000)}
            r["tokens_per_s"] = math.nan if s % 100 == 0 else 5000.0 + (s % 37)
            r["gpu/mem_gb"] = 20.0 + s / 100
    return write_log(folder / "train_log.jsonl", recs)


async def _open(pilot) -> MetricsScreen:
    await loaded(pilot, 1000)
    await pilot.press("b")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, MetricsScreen)
    return screen


def _bar(screen: MetricsScreen) -> str:
    return str(screen.query_one("#metrics-bar").render())


def _titles(screen: MetricsScreen) -> list[str]:
    return [c.spec.title for c in screen.query(MetricCell) if c.display and c.spec]


async def test_every_field_is_listed_and_a_regex_filters_them(tmp_path):
    app = console(browser_run(tmp_path / "run"))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        assert {"loss", "lr", "eval_chunk_mae", "breakdown.rig", *EXTRA} <= set(screen.shown)
        total = len(screen.shown)
        assert f"{total} of {total} fields" in _bar(screen)
        assert len(_titles(screen)) == 9  # one page of 3 x 3 at 120 x 40, not every field
        await pilot.press("slash", *"^(gpu|opt)", "enter")
        await pilot.pause()
        assert screen.shown == ["gpu/mem_gb", "opt.lr_head"]
        assert f"2 of {total} fields" in _bar(screen)
        assert _titles(screen) == ["gpu/mem_gb", "opt.lr_head"]
        assert app.focused is None  # Enter kept the filter and gave the keys back


async def test_a_bad_regex_says_so_in_one_line_and_keeps_the_filter(tmp_path):
    app = console(browser_run(tmp_path / "run"))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        await pilot.press("slash", *"mem", "enter", "slash", "backspace", *"mem[")
        await pilot.pause()
        error = str(screen.query_one("#metrics-error").render())
        assert "not a regular expression: 'mem['" in error and "\n" not in error
        assert screen.shown == ["gpu/mem_gb"]  # the filter before it stays
        await pilot.press("escape")  # Escape in the filter clears it
        await pilot.pause()
        assert screen.pattern == "" and len(screen.shown) > 10
        assert str(screen.query_one("#metrics-error").render()) == ""


async def test_a_pattern_too_slow_on_the_names_is_refused_and_the_filter_stays(tmp_path):
    """(a|aa)+b backtracks without end on a long name of a's: refused in time, in one line."""
    log = tmp_path / "run" / "train_log.jsonl"
    recs = records_upto(1000, SCALED_LIKE)
    for r in recs:
        if r["kind"] == "train":
            r["a" * 40] = 1.0
    write_log(log, recs)
    app = console(log)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        start = time.monotonic()
        await pilot.press("slash", *"(a|aa)+b")
        await pilot.pause()
        assert time.monotonic() - start < 5  # eight keystrokes, each refused within 0.2 s
        error = str(screen.query_one("#metrics-error").render())
        assert error == "the pattern takes too long on these names; the filter stays"
        assert screen.pattern == "(a|aa)+"  # the filter before the last key stays
        await pilot.press("ctrl+u", *"(\\w+\\.?)+A$")  # Python's re: minutes; here at once
        await pilot.pause()
        assert screen.shown == ["a" * 40] and str(screen.query_one("#metrics-error").render()) == ""


async def test_enter_opens_the_selected_chart_full_size_and_escape_returns(tmp_path):
    app = console(browser_run(tmp_path / "run"))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        await pilot.press("slash", *"tokens|gpu", "enter", "right", "enter")
        await pilot.pause()
        assert screen.full and screen.shown[screen.selected] == "tokens_per_s"
        await pilot.press("g", "g")  # drawn again while full size
        await pilot.pause()
        assert "page 1/1" in _bar(screen)  # the hidden grid kept its 3 x 3 page
        assert screen.query_one("#metrics-grid").shape == (3, 3)
        full = screen.query_one("#metrics-full", Chart)
        assert full.display and not screen.query_one("#metrics-grid").display
        assert full.spec is not None and full.spec.title == "tokens_per_s"
        ema = full.spec.curves[-1]
        assert ema.label == "EMA 0.9" and len(ema.ys) == 1000
        raw = full.spec.curves[0].ys
        assert math.isnan(raw[99]) and raw[98] == 5000.0 + 99 % 37  # NaN stays NaN
        await pilot.press("escape")
        await pilot.pause()
        assert not screen.full and screen.query_one("#metrics-grid").display
        assert screen.pattern == "tokens|gpu"  # back to the grid, the filter kept
        await pilot.press("escape")
        await pilot.pause()
        assert screen.pattern == ""


async def test_a_click_opens_a_chart_and_the_monitors_keys_smooth_and_log(tmp_path):
    app = console(browser_run(tmp_path / "run"))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        await pilot.press("down", "right")  # the second row's middle: the fifth field
        await pilot.pause()
        assert screen.selected == 4
        await pilot.press("E", "E", "E", "E", "g")
        await pilot.pause()
        cells = [c for c in screen.query(MetricCell) if c.display]
        assert all(c.spec.ylog and len(c.spec.curves) == 1 for c in cells if c.spec)
        await pilot.click(cells[2])
        await pilot.pause()
        assert screen.full and screen.selected == 2


async def test_the_rule_s_metric_is_marked_with_its_bounds(tmp_path):
    app = console(browser_run(tmp_path / "run"))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        assert "rule reads: eval_chunk_mae" in _bar(screen)
        await pilot.press("slash", *"^eval_chunk", "enter", "enter")
        await pilot.pause()
        spec = screen.query_one("#metrics-full", Chart).spec
        assert spec is not None and spec.title.startswith("◆ eval_chunk_mae")
        preset = app.view.preset.verdict
        anchor = app.session.store.probes[preset.anchor_step].eval_chunk_mae
        assert [h.y for h in spec.hlines] == pytest.approx(
            [anchor + preset.healthy, anchor + preset.drift]
        )
        assert "healthy" in text(screen.query_one("#metrics-full", Chart))


async def test_a_blinded_read_keeps_the_probes_fields_out_of_the_browser(tmp_path):
    from fontaine_tui.core.preset.find import load_preset
    from tests.commands.test_blind import blind_preset

    folder = tmp_path / "run"
    recs = [r for r in records_upto(750, SCALED_LIKE)]
    app = console(
        write_log(folder / "train_log.jsonl", recs), preset=load_preset(blind_preset(tmp_path))
    )
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 750)
        await pilot.press("b")
        await pilot.pause()
        screen = app.screen
        assert "loss" in screen.shown
        assert not [n for n in screen.shown if n.startswith(("eval", "breakdown", "train_chunk"))]
        assert "probe fields hidden (blinded)" in _bar(screen)


@pytest.mark.parametrize(
    "case,keys",
    [("grid", ("b",)), ("full", ("b", "slash", *"gpu|eval_c", "enter", "right", "enter"))],
)
def test_metrics_snapshot(case, keys, snap_compare, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths keep the header the same on every machine
    browser_run(tmp_path / "run")
    app = console(Path("run") / "train_log.jsonl")

    async def ready(pilot) -> None:
        await loaded(pilot, 1000)
        await pilot.press(*keys)
        await until(pilot, lambda: not any(c.pending for c in app.screen.query(Chart)))
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=SIZE, run_before=ready)


async def test_a_constant_smoothed_by_the_ema_is_drawn_flat(tmp_path):
    """A constant lr's EMA differs from itself in its last bits: no 20-digit tick labels."""
    app = console(browser_run(tmp_path / "run"))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        lr = next(c for c in screen.query(MetricCell) if c.spec and c.spec.title == "lr")
        assert "0.0003" in text(lr) and "0.0003000000000" not in text(lr)


async def test_a_chart_replotted_off_screen_is_not_built_again_on_the_key(tmp_path):
    """A spec whose turn came after `b` was left is drawn then: its mode's next key paints it."""
    from fontaine_tui.core.follow.local import LocalRun
    from tests.logs import dumps, train

    log = browser_run(tmp_path / "run", upto=500)
    app = console(log, source=LocalRun(log.parent), chart_s=1.5)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.view is not None and app.view.store.last_step == 500)
        await pilot.press("b")
        await until(pilot, lambda: all(c.builds for c in _shown(pilot.app.screen)))
        screen = pilot.app.screen
        cells = _shown(screen)
        with log.open("a") as fh:  # new lines inside the charts' interval: their turn waits
            fh.writelines(dumps(train(s, 1_787_000_000.0 + s)) + "\n" for s in range(501, 601))
        await until(pilot, lambda: app.view is not None and app.view.store.last_step == 600)
        await until(pilot, lambda: any(c.pending for c in cells))  # within their interval
        waiting = [c for c in cells if c.pending]
        before = [c.replots for c in waiting]
        await pilot.press("m")
        await until(pilot, lambda: not any(c.pending for c in cells))  # drawn off screen
        assert [c.replots for c in waiting] == [n + 1 for n in before]
        builds = [c.builds for c in cells]
        replots = [c.replots for c in cells]
        await pilot.press("b")
        await pilot.pause()
        assert pilot.app.screen is screen
        assert [c.builds for c in cells] == builds  # painted from what was built off screen
        assert [c.replots for c in cells] == replots


def _shown(screen: MetricsScreen) -> list[MetricCell]:
    return [c for c in screen.query(MetricCell) if c.display]
