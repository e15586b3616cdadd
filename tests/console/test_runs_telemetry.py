"""Runs mode over a real registry file; the telemetry panel with and without a sampler."""

from __future__ import annotations

from fontaine_tui.core.host.telemetry import sample
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.screens.monitor import MonitorScreen
from fontaine_tui.widgets.run_header import RunHeader
from fontaine_tui.widgets.telemetry_panel import TelemetryPanel
from tests.console.conftest import SIZE, console, loaded, make_run, text, until

MEMINFO = "MemTotal:       67108864 kB\nMemAvailable:   50331648 kB\n"


async def test_runs_mode_lists_the_registry_and_enter_attaches(tmp_path):
    replayed = make_run(tmp_path / "replayed", upto=500)
    other = tmp_path / "other"
    make_run(other, upto=750)
    registry = Registry(tmp_path / "registry.toml")
    from fontaine_tui.core.host.memory import hostname

    registry.upsert(
        Entry(
            name="other-run",
            run_dir=str(other),
            host=hostname(),
            preset="demosonly_1gpu",
            pid=0,
            launched_at="2026-08-17T18:41:00Z",
            status="exited",
        )
    )
    app = console(replayed, registry=registry)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 500)
        await pilot.press("r")
        await pilot.pause()
        table = app.screen.query_one("#runs-table")
        assert table.row_count == 1
        row = table.get_row_at(0)
        assert row[0] == "other-run" and row[1] == str(other) and row[3] == "exited"
        table.focus()
        await pilot.press("enter")
        await loaded(pilot, 750)  # now following the other folder, from its start
        assert isinstance(app.screen, MonitorScreen)
        assert app.session.kind == "attach" and app.session.folder == other
        title = text(app.screen.query_one(RunHeader).query_one("#title"))
        assert "ATTACHED" in title and f"local …/{other.name}" in title, title


async def test_no_telemetry_is_said_and_a_sampler_is_shown(tmp_path):
    log = make_run(tmp_path / "run", upto=500)
    app = console(log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 500)
        shown = text(app.screen.query_one(TelemetryPanel))
        assert "no telemetry (replay: no live machine)" in shown

    import os

    app = console(
        log,
        telemetry=lambda: sample(pid=os.getpid(), meminfo_text=MEMINFO, cuda_visible_devices=None),
    )
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 500)
        panel = app.screen.query_one(TelemetryPanel)
        await until(pilot, lambda: "host RAM" in text(panel))
        shown = text(panel)
        assert "host RAM 16.0/64.0 GiB used (48.0 GiB free" in shown
        assert f"engine pid {os.getpid()}: PSS" in shown
        assert "data-wait fraction 2.0%" in shown
        assert "GPU" in shown  # a GPU row, or the reason there is none
