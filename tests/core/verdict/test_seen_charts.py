"""The charts draw a run's probes and reads from the evidence gate's view alone.

A real log cut at step 750 (probes at 250, 500 and 750), read by the real library and drawn
from `seen_reads`: hidden, neither the probes chart (a delta read, a level read, the levels
before the anchor) nor the per-dataset view nor the overlay draws a point of this run, and each
says why, whatever its caller checked; shown, the same charts draw them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fontaine_tui.core.charts.overlay import OverlayRun, overlay_probes
from fontaine_tui.core.charts.probes import datasets_chart, probes_chart
from fontaine_tui.core.log.read import load_lines
from fontaine_tui.core.run.evidence import seen_reads
from fontaine_tui.core.verdict.rules import compute_verdict, verdict_series
from fontaine_tui.model.view import RunView
from tests.logs import RIGONLY_LIKE, dumps, records_upto

# what the run logged at its probes: none may be drawn while its read is hidden
LOGGED = {v for pair in RIGONLY_LIKE.values() for v in pair}


def _store(upto: int):
    return load_lines([b"".join(dumps(r).encode() + b"\n" for r in records_upto(upto))])


def _charts(store, preset, hidden: bool):
    seen = seen_reads(store, verdict_series(store, preset), hidden)
    latest = compute_verdict(store, preset)
    return [
        probes_chart(seen, preset, latest, scaled=False),
        probes_chart(seen, preset, latest, scaled=True),
        datasets_chart(seen, preset),
    ]


def _this_run(chart):
    return [c for c in chart.curves if c.label.startswith("this run")]


@pytest.mark.parametrize("upto", [260, 750])  # before the anchor probe (levels), and after
@pytest.mark.parametrize("read", ["delta", "level"])
def test_a_hidden_view_draws_none_of_the_runs_probes_or_reads(demosonly, upto, read):
    preset = replace(demosonly, verdict=replace(demosonly.verdict, read=read))
    store = _store(upto)
    for chart in _charts(store, preset, hidden=True):
        ours = _this_run(chart)
        assert all(len(c.xs) == len(c.ys) == 0 for c in ours), chart.title
        drawn = {y for c in chart.curves if c.label.startswith("this run") for y in c.ys}
        assert not drawn & LOGGED
        assert chart.note == "this run's probes and reads hidden (blinded) until the endpoint"
    for chart in _charts(store, preset, hidden=False):  # the same charts, shown: drawn
        assert any(len(c.xs) for c in _this_run(chart)), chart.title
        assert "hidden" not in chart.note


def test_the_overlay_draws_no_read_of_a_run_whose_view_is_hidden(demosonly):
    store = _store(750)
    series = verdict_series(store, demosonly)
    runs = [
        OverlayRun(name, "running", color, store, demosonly, seen_reads(store, series, hidden))
        for name, color, hidden in (("shown", "cyan", False), ("hid", "magenta", True))
    ]
    assert [(r.blinded, r.read_words) for r in runs] == [
        (False, "read +0.4000 @ 750"),
        (True, "read blinded"),
    ]
    chart = overlay_probes(runs)
    assert [len(c.xs) for c in chart.curves] == [2, 0]
    assert "blinded, read not drawn: hid" in chart.note


def test_a_view_built_without_the_gates_reads_draws_nothing(demosonly):
    """RunView's default: no probe, no read, hidden (a surface that forgot it draws none)."""
    store = _store(750)
    latest = compute_verdict(store, demosonly)
    view = RunView(0, "r", "r", demosonly, "", store, None, (), latest, (), None, (), "")
    assert view.seen.hidden and not view.seen.by_step and not view.seen.verdicts
    chart = probes_chart(view.seen, demosonly, latest, scaled=False)
    assert all(len(c.xs) == 0 for c in _this_run(chart))
