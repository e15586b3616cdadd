"""Replay a fixture log cut at 250, 500, 750 and 1000: what each mode shows at each."""

from __future__ import annotations

import pytest

from fontaine_tui.widgets.chart import Chart
from fontaine_tui.widgets.probes_table import ProbesTable
from fontaine_tui.widgets.run_header import RunHeader
from fontaine_tui.widgets.verdict_panel import RulesPanel, VerdictBanner
from tests.console.conftest import SIZE, console, loaded, make_run, text

# (step, verdict label, provisional, delta text, chart title fragment)
EXPECTED = [
    (250, "UNDECIDABLE", True, "—", "eval levels before the anchor probe"),
    (500, "HEALTHY", True, "+0.0000", "delta(s) = eval_chunk_mae(s)"),
    (750, "AMBIGUOUS", True, "+0.4000", "delta(s) = eval_chunk_mae(s)"),
    (1000, "AMBIGUOUS", False, "+0.6929", "delta(s) = eval_chunk_mae(s)"),
]


@pytest.mark.parametrize(
    ("step", "label", "provisional", "delta", "title"),
    EXPECTED,
    ids=[f"step{e[0]}" for e in EXPECTED],
)
async def test_each_mode_at_probe_step(tmp_path, step, label, provisional, delta, title):
    log = make_run(tmp_path / "run", upto=step)
    app = console(log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, step)

        header = text(app.screen.query_one(RunHeader).query_one("#pace"))
        assert f"step {step} / 1000" in header
        assert "0.50s/step (med 0.50s)" in header
        title_line = text(app.screen.query_one(RunHeader).query_one("#title"))
        assert "grasp_sft_v2_demosonly_1gpu_disc" in title_line and "REPLAY" in title_line

        await pilot.press("p")
        await pilot.pause()
        chart = app.screen.query_one("#probes-chart", Chart)
        assert title in chart.spec.title
        drawn = text(chart)
        table = app.screen.query_one(ProbesTable)
        assert table.row_count == step // 250
        last_row = table.get_row_at(table.row_count - 1)
        assert last_row[0] == str(step) and last_row[2] == delta
        if step == 250:  # levels against the comparator's step-250 level, no deltas yet
            assert "demosonly eval 3.4623 @ 250" in drawn
            assert not any("endpoint" in m.label for m in chart.spec.marks)
        else:  # banked deltas drawn once each, at the endpoint, labelled as endpoints
            assert "demosonly +2.0317 @ endpoint" in drawn
            assert "rigonly +0.6929 @ endpoint" in drawn
            assert all(m.x == 1000 for m in chart.spec.marks)
            assert "healthy <= +0.3000" in drawn and "same-drift >= +1.0158" in drawn
            assert chart.spec.curves[0].xs == tuple(float(s) for s in range(500, step + 1, 250))

        await pilot.press("v")
        await pilot.pause()
        banner = text(app.screen.query_one(VerdictBanner))
        assert banner.startswith(label)
        assert ("[PROVISIONAL]" in banner) is provisional
        assert ("[FINAL]" in banner) is (not provisional)
        assert f"read at step {step} of 1000" in banner
        raw = text(app.screen.query_one(RulesPanel).query_one("#raw"))
        if step >= 500:
            assert f"delta            {delta}" in raw
            assert "healthy if delta <= +0.3000" in raw and "drift   if delta >= +1.0158" in raw
        else:
            assert "no anchor probe yet" in raw
