"""The charts' cursor (`c`, left/right) and wall-time axis (`w`), in the metric browser and the
probes mode, on a run folder written by the engine's own log writer (engine/logwriter.py)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from engine import logwriter
from fontaine_tui.core.charts.chart import ChartSpec, Curve
from fontaine_tui.core.charts.cursor import NO_VALUE, read_at, value_text, wall_axis
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.screens.metrics import MetricsScreen
from fontaine_tui.screens.probes import CURSOR_BLINDED
from fontaine_tui.widgets.chart import Chart
from tests.commands.test_blind import SECRETS, blind_preset
from tests.console.conftest import SIZE, console, loaded, text
from tests.logs import SCALED_LIKE, records_upto

T0 = 1_787_000_000.0
STEP_S = 2.0  # seconds a step: 1000 steps are 33 min on the wall


def written_run(folder: Path, monkeypatch, upto: int = 1000) -> tuple[Path, list[dict]]:
    """The fixture run's records written by LogWriter, each at T0 + STEP_S per step."""
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "train_log.jsonl"
    now = [T0]
    monkeypatch.setattr(logwriter, "time", SimpleNamespace(time=lambda: now[0]))
    writer = logwriter.LogWriter(log)
    recs = records_upto(upto, SCALED_LIKE)
    for r in recs:
        now[0] = T0 + r["step"] * STEP_S + (0.1 if r["kind"] == "eval" else 0.0)
        fields = {k: v for k, v in r.items() if k not in ("kind", "step", "time")}
        writer.write(r["kind"], r["step"], **fields)
    writer.close()
    monkeypatch.undo()
    written = [json.loads(line) for line in log.read_text().splitlines()]
    return log, written


def _by_step(recs: list[dict], kind: str) -> dict[int, dict]:
    return {r["step"]: r for r in recs if r["kind"] == kind}


def _said(app, which: str) -> str:
    return str(app.screen.query_one(f"#{which}-cursor").render())


async def _full(pilot, pattern: str) -> MetricsScreen:
    await pilot.press("b", "slash", *pattern, "enter")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, MetricsScreen) and len(screen.shown) == 1
    return screen


async def test_the_cursor_reads_each_series_at_its_step_and_moves(tmp_path, monkeypatch):
    log, recs = written_run(tmp_path / "run", monkeypatch)
    train = _by_step(recs, "train")
    app = console(log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        screen = await _full(pilot, "^grad_norm$")
        assert not screen.query_one("#metrics-cursor").display  # off: the chart as it was
        await pilot.press("c")  # from the grid: the chart full size, its cursor on
        await pilot.pause()
        assert screen.full and screen.look.cursor
        line = _said(app, "metrics")
        assert line.startswith("step 1000:")
        assert f"grad_norm {value_text(train[1000]['grad_norm'])}" in line
        assert "grad_norm EMA 0.9 " in line  # the smoothed curve is read too, by its name
        chart = screen.query_one("#metrics-full", Chart)
        assert chart.spec is not None and chart.spec.vline == 1000
        await pilot.press("left", "left", "left")
        await pilot.pause()
        line = _said(app, "metrics")
        assert line.startswith("step 997:")
        assert f"grad_norm {value_text(train[997]['grad_norm'])}" in line
        assert chart.spec.vline == 997
        await pilot.press("right", "right", "right", "right")  # held at the last step
        await pilot.pause()
        assert _said(app, "metrics").startswith("step 1000:")
        await pilot.press("escape")  # the cursor off, the chart still full size
        await pilot.pause()
        assert screen.full and not screen.look.cursor
        assert not screen.query_one("#metrics-cursor").display and chart.spec.vline is None


async def test_the_probes_cursor_reads_the_read_at_each_probe(tmp_path, monkeypatch):
    log, recs = written_run(tmp_path / "run", monkeypatch)
    probes = _by_step(recs, "eval")
    app = console(log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await pilot.press("p", "c")
        await pilot.pause()
        delta = probes[1000]["eval_chunk_mae"] - probes[500]["eval_chunk_mae"]
        line = _said(app, "probes")
        assert line == f"step 1000:  this run delta(500->s) {value_text(delta, True)}"
        await pilot.press("left")
        await pilot.pause()
        delta = probes[750]["eval_chunk_mae"] - probes[500]["eval_chunk_mae"]
        assert (
            _said(app, "probes") == f"step 750:  this run delta(500->s) {value_text(delta, True)}"
        )
        await pilot.press("c")  # the key again: off
        await pilot.pause()
        assert not app.screen.query_one("#probes-cursor").display


async def test_the_cursor_reads_no_blinded_probe_until_unblinded(tmp_path, monkeypatch):
    monkeypatch.setenv("FONTAINE_USER", "carol")
    folder = tmp_path / "run"
    log, recs = written_run(folder, monkeypatch, upto=750)
    probes = _by_step(recs, "eval")
    app = console(log, preset=load_preset(blind_preset(tmp_path)))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 750)
        await pilot.press("p", "c", "left")
        await pilot.pause()
        line = _said(app, "probes")
        assert line == CURSOR_BLINDED
        assert not any(s in line for s in SECRETS)
        await pilot.press("b", "c")  # the browser: its first field, a train one, and no probe
        await pilot.pause()
        line = _said(app, "metrics")
        assert line.startswith("step 750:  loss ")
        assert "eval" not in line and not any(s in line for s in SECRETS)
        await pilot.press("v", "u")
        await pilot.pause()
        await pilot.press(*"sponsor asked", "enter")
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
        delta = probes[750]["eval_chunk_mae"] - probes[500]["eval_chunk_mae"]
        assert (
            _said(app, "probes") == f"step 750:  this run delta(500->s) {value_text(delta, True)}"
        )


async def test_wall_time_draws_the_elapsed_minutes(tmp_path, monkeypatch):
    log, recs = written_run(tmp_path / "run", monkeypatch)
    app = console(log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        screen = await _full(pilot, "^loss$")
        await pilot.press("enter")
        await pilot.pause()
        chart = screen.query_one("#metrics-full", Chart)
        assert " min" not in text(chart)
        await pilot.press("w")
        await pilot.pause()
        drawn = text(chart)
        assert chart.spec is not None and chart.spec.xlabel == "elapsed (min)"
        assert "10 min" in drawn and "30 min" in drawn  # 1000 steps of 2 s: 33 min
        assert max(chart.spec.curves[0].xs) == pytest.approx(1000 * STEP_S / 60)
        await pilot.press("c")
        await pilot.pause()
        assert _said(app, "metrics").startswith("step 1000 (33.33 min):")
        await pilot.press("w")  # back to steps
        await pilot.pause()
        assert " min" not in text(chart) and chart.spec.xlabel == ""


def test_a_series_without_times_is_said_not_drawn_and_a_missing_value_is_a_dash():
    run = Curve("this run", (250.0, 500.0), (1.0, 2.0), "cyan", ts=(T0 + 60, T0 + 600))
    banked = Curve("banked", (250.0, 750.0), (0.5, 0.75), "red", faint=True)
    spec = ChartSpec("t", "step", "delta", (banked, run))
    axis = wall_axis(spec, T0)
    assert [c.label for c in axis.spec.curves] == ["this run"]
    assert axis.spec.curves[0].xs == (1.0, 10.0)  # min: 600 s is under 3 h
    assert axis.untimed_line() == "no times in the records of banked: not drawn on wall time"
    assert read_at(spec, 500.0) == [("banked", NO_VALUE), ("this run", "+2")]
