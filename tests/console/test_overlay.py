"""The overlay mode: runs pinned in the runs mode (space), overlaid on `o`, a live run's new
lines drawn as they are appended to its real log file; and how the overlay looks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from textual.widgets import DataTable

from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.fleet import Fleet
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.screens.overlay import OverlayScreen
from fontaine_tui.widgets.chart import Chart
from tests.console.conftest import SIZE, console, make_run, text, until
from tests.logs import dumps, records_upto, write_log
from tests.sshd_helper import HOST_ALIAS


def _two_runs(root: Path, preset, registry_path: Path) -> Registry:
    """`live` (600 of 1000 steps, its pid alive) and `done` (all 1000), both registered."""
    reg = Registry(registry_path)
    for name, upto, pid, status in (
        ("live", 600, os.getpid(), "running"),
        ("done", 1000, 0, "exited"),
    ):
        make_run(root / name, upto=upto)
        if name == "done":  # a lower loss than live's, so both curves show
            recs = [
                {**r, "loss": r["loss"] * 0.7} if r["kind"] == "train" else r
                for r in records_upto(upto)
            ]
            write_log(root / name / "train_log.jsonl", recs)
        freeze(RunFolder(root / name), preset, ["launch"], "here", now=1_786_999_000)
        reg.upsert(
            Entry(
                name=name,
                run_dir=str(Path(name)),
                host=hostname(),
                preset=preset.name,
                pid=pid,
                launched_at="2026-08-17T18:41:00Z",
                status=status,
            )
        )
    return reg


async def _pin_both(pilot) -> DataTable:
    table = pilot.app.screen.query_one(DataTable)
    await until(pilot, lambda: table.row_count == 2)
    table.focus()
    await pilot.press("space", "down", "space")
    return table


def _legend(app) -> str:
    return text(app.screen.query_one("#overlay-legend"))


async def test_pinned_runs_are_overlaid_and_a_live_runs_new_lines_appear(
    tmp_path, preset, registry_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    reg = _two_runs(tmp_path, preset, registry_path)
    app = console(make_run(tmp_path / "shown", upto=500), registry=reg, start_mode="runs")
    async with app.run_test(size=SIZE) as pilot:
        table = await _pin_both(pilot)
        names = sorted(str(table.get_row_at(i)[0]) for i in range(2))
        assert names == ["● done", "● live"]  # each pinned row carries its colour's dot
        assert list(table.columns.values())[0].content_width >= len("● live")  # not cut short
        assert "2 pinned, o overlays them" in text(app.screen.query_one("#runs-title"))
        await pilot.press("o")
        assert isinstance(app.screen, OverlayScreen)
        losses = app.screen.query_one("#overlay-losses", Chart)
        probes = app.screen.query_one("#overlay-probes", Chart)

        def drawn(chart: Chart) -> dict[str, int]:
            spec = chart.spec
            return {c.label: len(c.xs) for c in spec.curves} if spec is not None else {}

        await until(
            pilot, lambda: drawn(losses) == {"live (running)": 600, "done (finished)": 1000}
        )
        assert {c.label: c.color for c in losses.spec.curves} == {
            "live (running)": "cyan",
            "done (finished)": "magenta",
        }
        legend = _legend(app)
        assert "live  running  step 600  read +0.0000 @ 500" in legend
        assert "done  finished  step 1000  read +0.6929 @ 1000" in legend
        # one rule for both: its bounds drawn and said
        assert [h.y for h in probes.spec.hlines] == [0.30, 1.0158]
        assert "every run's rule" in text(app.screen.query_one("#overlay-note"))
        # the live run's log grows on disk while the console follows it
        with open(tmp_path / "live" / "train_log.jsonl", "a") as fh:
            fh.write("".join(dumps(r) + "\n" for r in records_upto(800)[len(records_upto(600)) :]))
        await until(pilot, lambda: drawn(losses).get("live (running)") == 800)
        await until(pilot, lambda: "live  running  step 800  read +0.4000 @ 750" in _legend(app))
        await until(pilot, lambda: drawn(probes).get("live (running)") == 2)
        await until(pilot, lambda: not losses.pending)
        assert "live (running)" in text(losses) and "done (finished)" in text(losses)
        # space unpins: back in the runs mode, one run left in the overlay
        await pilot.press("r")
        app.screen.query_one(DataTable).focus()
        await pilot.press("space")
        await pilot.press("o")
        await until(pilot, lambda: len(drawn(losses)) == 1)


async def test_pinning_keeps_the_cursor_so_space_down_pins_every_run(
    tmp_path, preset, registry_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    reg = _two_runs(tmp_path, preset, registry_path)
    make_run(tmp_path / "third", upto=300)
    reg.upsert(Entry(name="third", run_dir="third", host=hostname(), preset=preset.name))
    app = console(make_run(tmp_path / "shown", upto=500), registry=reg, start_mode="runs")
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(DataTable)
        await until(pilot, lambda: table.row_count == 3)
        table.focus()
        await pilot.press("space", "down", "space", "down", "space")
        assert sorted(p.entry.name for p in app.overlay.pins.values()) == ["done", "live", "third"]
        assert table.cursor_row == 2


def test_overlay_snapshot(snap_compare, tmp_path, preset, registry_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    reg = _two_runs(tmp_path, preset, registry_path)
    app = console(make_run(tmp_path / "shown", upto=500), registry=reg, start_mode="runs")

    async def ready(pilot) -> None:
        await _pin_both(pilot)
        await pilot.press("o")
        losses = pilot.app.screen.query_one("#overlay-losses", Chart)
        await until(
            pilot,
            lambda: (
                losses.spec is not None
                and sum(len(c.xs) for c in losses.spec.curves) == 1600
                and not any(c.pending for c in pilot.app.screen.query(Chart))
            ),
        )
        pilot.app.clear_notifications()  # the pin toasts: the overlay alone
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=SIZE, run_before=ready)


@pytest.mark.ssh
async def test_a_remote_run_is_pinned_and_followed_over_ssh(
    sshd, tmp_path, preset, registry_path, fleet_control
):
    """A row on another host (a real sshd on 127.0.0.1) is overlaid beside a local one."""
    here, there = tmp_path / "here", tmp_path / "far run"
    for folder, upto in ((here, 1000), (there, 600)):
        make_run(folder, upto=upto)
        freeze(RunFolder(folder), preset, ["python"], "h")
    reg = Registry(registry_path)
    reg.upsert(Entry(name="near", run_dir=str(here), host=hostname(), preset=preset.name))
    reg.upsert(
        Entry(name="far", run_dir=str(there), host=HOST_ALIAS, preset=preset.name, status="running")
    )
    options = ("-F", str(sshd.config))
    app = console(make_run(tmp_path / "shown", upto=500), registry=reg, start_mode="runs")
    app.runs.fleet = Fleet(tmp_path / "fleet.json", fleet_control, hostname(), options)
    app.ssh_options = options
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(DataTable)
        hosts = lambda: {str(table.get_row_at(i)[1]) for i in range(table.row_count)}  # noqa: E731
        await until(pilot, lambda: HOST_ALIAS in hosts(), 20)  # the fleet's look: host:folder
        table.focus()
        await pilot.press("space", "down", "space", "o")
        losses = app.screen.query_one("#overlay-losses", Chart)

        def far_steps() -> int:
            spec = losses.spec
            far = [c for c in spec.curves if c.label.startswith("far")] if spec else []
            return len(far[0].xs) if far else 0

        await until(pilot, lambda: far_steps() == 600, 20)
        far = app.overlay.pins[f"{HOST_ALIAS}:{there}"]
        assert far.session.source.label == f"ssh {HOST_ALIAS}:{there}"
        await until(pilot, lambda: far.session.ledger.hash_ok is True, 20)  # read over SSH
        with open(there / "train_log.jsonl", "a") as fh:
            fh.write("".join(dumps(r) + "\n" for r in records_upto(700)[len(records_upto(600)) :]))
        await until(pilot, lambda: far_steps() == 700, 20)
        await until(pilot, lambda: "far  running  step 700" in _legend(app), 20)


async def test_enter_on_a_row_naming_a_host_ssh_would_read_as_an_option_says_one_line(
    tmp_path, preset, registry_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    reg = _two_runs(tmp_path, preset, registry_path)
    app = console(make_run(tmp_path / "shown", upto=500), registry=reg, start_mode="runs")
    async with app.run_test(size=SIZE) as pilot:
        table = pilot.app.screen.query_one(DataTable)
        await until(pilot, lambda: table.row_count == 2)
        table.add_row("evil", key="-oProxyCommand=touch x:/runs/a")
        table.focus()
        table.move_cursor(row=table.row_count - 1, animate=False)
        await pilot.press("enter")
        await until(
            pilot,
            lambda: any("may not begin with '-'" in str(n.message) for n in app._notifications),
        )
        assert app.is_running and not (tmp_path / "x").exists()


async def test_a_viewers_blind_goes_with_the_runs_pinned_and_attached_from_the_list(
    tmp_path, preset, registry_path, monkeypatch
):
    # `--blind` on a run whose preset is not blind: the overlay and a run attached from the
    # list are as blind as the monitor, never a way around it
    monkeypatch.chdir(tmp_path)
    reg = _two_runs(tmp_path, preset, registry_path)
    app = console(
        make_run(tmp_path / "shown", upto=500), registry=reg, start_mode="runs", blind=True
    )
    async with app.run_test(size=SIZE) as pilot:
        await _pin_both(pilot)
        await pilot.press("o")
        # live is at 600 of 1000, hidden; done reached its endpoint, where the read is shown
        await until(pilot, lambda: "step 1000" in _legend(app) and "step 600" in _legend(app))
        live = next(line for line in _legend(app).splitlines() if "live" in line)
        assert "read blinded" in live and "read +" not in live
        await pilot.press("r")
        table = app.screen.query_one(DataTable)
        table.focus()
        row = next(i for i in range(table.row_count) if "live" in str(table.get_row_at(i)[0]))
        table.move_cursor(row=row, animate=False)
        await pilot.press("enter")
        await until(pilot, lambda: app.view is not None and app.view.label == "local live")
        assert app.session.blind_asked and app.view.blinded
