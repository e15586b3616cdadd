"""`fontaine-tui demo` in the console: the shipped run, staged as the command stages it, seen
in the monitor, probes and verdict modes, with a review key, and no torch imported."""

from __future__ import annotations

import asyncio
import json
import sys

from textual.widgets import Static

from fontaine_tui.commands import demo
from fontaine_tui.screens.dialogs import ConfirmDialog
from fontaine_tui.screens.monitor import MonitorScreen
from fontaine_tui.screens.probes import ProbesScreen
from fontaine_tui.screens.verdict import VerdictScreen
from fontaine_tui.widgets.chart import Chart
from fontaine_tui.widgets.verdict_panel import VerdictBanner
from tests.console.conftest import SIZE, demo_console, loaded, text, until


async def _drive(app, staged: demo.Staged) -> dict[str, str]:
    seen: dict[str, str] = {}
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 300)
        assert isinstance(app.screen, MonitorScreen)
        seen["monitor"] = text(app.screen.query_one(Chart))
        await pilot.press("p")
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, ProbesScreen)
                and not app.screen.query_one("#probes-chart", Chart).pending
            ),
        )
        seen["probes"] = text(app.screen.query_one("#probes-chart", Chart))
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, VerdictScreen))
        await pilot.pause()
        seen["verdict"] = text(app.screen.query_one(VerdictBanner))
        await pilot.press("a")  # accept the read: asked first
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        seen["asked"] = " ".join(text(w) for w in app.screen.query(Static))
        await pilot.press("y")  # confirmed: review.jsonl, in the copy
        await until(pilot, lambda: (staged.folder / "review.jsonl").exists())
        seen["review"] = (staged.folder / "review.jsonl").read_text()
        await pilot.press("q")
    return seen


def test_demo_in_the_console_monitor_probes_verdict(monkeypatch, tmp_path):

    # an `import torch` anywhere on the console's path raises from here on
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "transformers", None)
    package = demo.shipped()
    with demo.staged(speed=1e6) as staged:
        assert staged.folder.name == "run" and staged.folder.parent.name.startswith(
            "fontaine-demo-"
        )
        # as the demo command passes it
        app = demo_console(staged, export_folder=tmp_path / "export")
        seen = asyncio.run(_drive(app, staged))
    assert not staged.folder.exists()  # the temporary folder went with the demo
    assert "AR CE" in seen["monitor"] and "step" in seen["monitor"]
    prereg = json.loads((package / "run" / "prereg.json").read_bytes())
    sha = prereg["preset"]["comparators"]["dist2"]["bank"].partition("@")[2]
    assert f"dist2 (banked {sha[:8]})" in seen["probes"]  # the banked comparator's curve
    assert "this run delta(150->s)" in seen["probes"]
    assert seen["verdict"].startswith("HEALTHY  [FINAL]  read at step 300 of 300")
    # the trail is the copy's: the dialog does not say a line is kept for good
    assert "removed on quit" in seen["asked"] and "kept for good" not in seen["asked"]
    review = json.loads(seen["review"].splitlines()[0])
    assert (review["action"], review["verdict"], review["read_step"]) == ("accept", "HEALTHY", 300)
    assert not (package / "run" / "review.jsonl").is_file()


def test_the_demos_export_is_kept_after_it_quits(tmp_path):
    """`e` in the demo writes where the demo says (its run folder is a temporary copy, removed
    on quit): the export is there afterwards, and the status line says it is kept."""

    kept = tmp_path / "demo-export"  # not made yet: the export makes it
    with demo.staged(speed=1e6) as staged:
        app = demo_console(staged, export_folder=kept)  # as the demo command passes it

        async def export() -> str:
            async with app.run_test(size=SIZE) as pilot:
                await loaded(pilot, 300)
                await pilot.press("v", "e")
                await until(pilot, lambda: "wrote" in app.review_status, timeout=60)
                await pilot.press("q")
            return app.review_status

        said = asyncio.run(export())
        assert not (staged.folder / "verdict.json").exists()
    assert not staged.folder.exists()
    doc = json.loads((kept / "verdict.json").read_text())
    assert (doc["verdict"], doc["read_step"]) == ("HEALTHY", 300)
    assert f"wrote {kept / 'verdict.json'}" in said
    assert "kept after quitting (the run folder is a temporary copy)" in said


def test_the_demos_export_never_writes_where_it_should_not(tmp_path):
    """A link named like the export folder (into another run's folder), a folder holding a run,
    and a folder whose verdict.json cannot be written: nothing is written, one line says why,
    and the console goes on (it ended in a traceback)."""

    other = tmp_path / "other_run"
    other.mkdir()
    (other / "verdict.json").write_text('{"verdict": "UNDECIDABLE", "mine": true}\n')
    link = tmp_path / "link-export"
    link.symlink_to(other)
    run_like = tmp_path / "run-export"
    run_like.mkdir()
    (run_like / "train_log.jsonl").write_text("")
    blocked = tmp_path / "blocked-export"  # its verdict.json is a folder: writing it fails
    (blocked / "verdict.json").mkdir(parents=True)
    cases = {
        link: "it is a link",
        run_like: "it holds a run (train_log.jsonl)",
        blocked: "export not written",
    }
    for folder, why in cases.items():
        with demo.staged(speed=1e6) as staged:
            app = demo_console(staged, export_folder=folder)

            async def export(app=app) -> tuple[str, bool]:
                async with app.run_test(size=SIZE) as pilot:
                    await loaded(pilot, 300)
                    await pilot.press("v", "e")
                    await until(pilot, lambda: "not written" in app.review_status, 60)
                    await pilot.press("q")
                return app.review_status, app.return_code == 0

            said, clean = asyncio.run(export())
        assert why in said and clean, (folder, said)
    assert json.loads((other / "verdict.json").read_text()) == {
        "verdict": "UNDECIDABLE",
        "mine": True,
    }
    assert not (other / "disc_overlay.png").exists()
