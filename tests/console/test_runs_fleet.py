"""The runs screen over the fleet: every host's runs checked in a thread (a real sshd on
127.0.0.1), and Enter on a remote row attaches the console to it over SSH."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from fontaine_tui.console import make_app
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.fleet import Fleet
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.verdict import prereg
from tests.console.conftest import SIZE, fixed_clock, make_run, until
from tests.sshd_helper import HOST_ALIAS

pytestmark = pytest.mark.ssh


async def test_enter_on_a_remote_row_attaches_over_ssh(
    sshd, tmp_path, preset, registry_path, fleet_control
):
    here, there = tmp_path / "here", tmp_path / "far run"
    for folder, upto in ((here, 1000), (there, 600)):
        make_run(folder, upto=upto)
        prereg.freeze(RunFolder(folder), preset, ["python"], "h")
    reg = Registry(registry_path)
    reg.upsert(Entry(name="near", run_dir=str(here), host=hostname(), preset=preset.name))
    reg.upsert(Entry(name="far", run_dir=str(there), host=HOST_ALIAS, preset=preset.name))
    options = ("-F", str(sshd.config))
    fleet = Fleet(tmp_path / "fleet.json", fleet_control, hostname(), options)
    app = make_app(
        source=LocalRun(here),
        preset=preset,
        clock=fixed_clock,
        registry=reg,
        kind="attach",
        start_mode="runs",
    )
    app.runs.fleet, app.ssh_options = fleet, options
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(DataTable)

        def far_row() -> list[str]:
            rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
            return next((r for r in rows if r[0] == "far"), [])

        await until(pilot, lambda: "600/1000" in " ".join(far_row()), 20)
        # the columns `fontaine-tui runs` prints: step, s/step, the last probe and its read,
        # GPU-hours, warnings, when it was checked
        cols = [str(c.label) for c in table.columns.values()]
        row = dict(zip(cols, far_row(), strict=True))
        assert row["host"] == HOST_ALIAS and row["checked"] == "now"
        assert row["step"] == "600/1000" and float(row["s/step"]) > 0
        assert row["probe"].startswith("500:") and "PROVISIONAL" in row["read"]
        assert {"gpu-h", "warn", "pid", "folder"} <= set(cols)
        table.move_cursor(
            row=[i for i in range(table.row_count) if str(table.get_row_at(i)[0]) == "far"][0]
        )
        await pilot.press("enter")
        await until(pilot, lambda: app.session.store.last_step == 600, 20)
        assert app.session.source.label == f"ssh {HOST_ALIAS}:{there}"
        await until(pilot, lambda: app.session.ledger.hash_ok is True, 20)  # its prereg.json
