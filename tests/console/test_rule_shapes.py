"""The console on a preset of another shape: a success rate, higher is better, read as a level
against absolute bounds, with the preset's own labels."""

from __future__ import annotations

from pathlib import Path

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.widgets.chart import Chart
from fontaine_tui.widgets.probes_table import ProbesTable
from fontaine_tui.widgets.verdict_panel import VerdictBanner
from tests.console.conftest import SIZE, console, loaded, text
from tests.logs import probe, records, write_log

DATA = Path(__file__).parents[1] / "data" / "presets"


async def test_a_level_read_of_a_success_rate_in_the_presets_words(tmp_path):
    recs = [r for r in records() if r["kind"] != "eval"]
    for step, rate in {250: 0.2, 500: 0.5, 750: 0.7, 1000: 0.3}.items():
        recs.append({**probe(step, 1000.0 + step, 3.0, 3.0), "success_rate": rate})
    recs.sort(key=lambda r: (r["step"], r["kind"] != "train"))
    log = write_log(tmp_path / "run" / "train_log.jsonl", recs)
    app = console(log, preset=load_preset(DATA / "success_level.toml"))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await pilot.press("v")
        await pilot.pause()
        banner = text(app.screen.query_one(VerdictBanner))
        assert banner.startswith("FAIL  [FINAL]") and "level +0.3000" in banner
        await pilot.press("p")
        await pilot.pause()
        table = app.screen.query_one(ProbesTable)
        headers = [str(c.label) for c in table.columns.values()]
        assert headers[:4] == ["step", "success_rate", "eval MAE", "level"]
        assert table.get_row("1000")[1] == "0.3000"
        chart = app.screen.query_one("#probes-chart", Chart)
        assert chart.spec.title == "success_rate(s), the level read (higher is better)"
        assert [h.label for h in chart.spec.hlines] == [
            "healthy >= +0.8000",
            "same-drift <= +0.5000",
        ]


async def test_the_header_says_when_the_decision_locked(tmp_path):
    from fontaine_tui.widgets.run_header import RunHeader
    from tests.core.launch.conftest import without_amendments

    path = without_amendments(tmp_path)
    path.write_text(
        path.read_text().replace("drift_min = 1.0158", "drift_min = 1.0158\nmax_probe_change = 0.2")
    )
    probes = {250: (3.40, 3.6), 500: (3.10, 3.2), 750: (3.15, 3.25), 1000: (3.20, 3.3)}
    log = write_log(tmp_path / "run" / "train_log.jsonl", records(probes=probes))
    app = console(log, preset=load_preset(path))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        header = text(app.screen.query_one(RunHeader).query_one("#title"))
        assert "decision locked at step 750 (HEALTHY)" in " ".join(header.split())
