"""The console on a run another trainer writes (torch's SummaryWriter): no false alert reaches
a real webhook on 127.0.0.1, a run with its final read in reads ended, and review and export
write into its folder; the engine's columns (eval MAE, train MAE and delta, AR CE) are not
shown for it."""

from __future__ import annotations

import json

import pytest

from fontaine_tui.console import make_app
from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.widgets.probes_table import ProbesTable
from fontaine_tui.widgets.verdict_panel import LedgerPanel
from tests.console.conftest import SIZE, loaded, text, until
from tests.core.log.formats.conftest import foreign_preset
from tests.core.notify.server import Hook
from tests.foreign_writers import T0, write_tb


@pytest.fixture(autouse=True)
def no_user_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    """A real run to its endpoint (80) and its preset; each test copies the folder."""
    root = tmp_path_factory.mktemp("tb")
    write_tb(root / "done", 80)
    return root / "done", load_preset(str(foreign_preset(root, 'kind = "tensorboard"')))


def app_on(folder, preset, now: float):
    return make_app(
        source=ForeignRun(folder, SourceSpec("tensorboard"), poll_s=0.05),
        preset=preset,
        clock=lambda: now,
        kind="attach",
        babysit_host="here",
        frame_s=0.05,
    )


def copy(folder, tmp_path):
    import shutil

    return shutil.copytree(folder, tmp_path / "run")


async def test_an_attached_foreign_run_posts_no_false_alert_and_reads_ended(
    done, tmp_path, monkeypatch
):
    folder, preset = copy(done[0], tmp_path), done[1]
    hook = Hook()
    monkeypatch.setenv("FONTAINE_NOTIFY", hook.url("/hooks/K1"))
    app = app_on(folder, preset, T0 + 3600)  # an hour after its last write
    try:
        async with app.run_test(size=SIZE) as pilot:
            await loaded(pilot, 80)
            await until(pilot, lambda: 80 in app.session.store.probes)
            await until(
                pilot,
                lambda: (
                    app.babysitter is not None
                    and app.babysitter.polls > 0
                    and app.babysitter.finalized
                ),
            )
            await pilot.pause(0.5)
            rules = {w.rule for w in app.session.warnings}
            assert app.view.status == "attached (ended)"
        posts = [json.loads(r.body) for r in hook.wait_for(2)]
        # attached again: its final read was posted once, not again
        again = app_on(folder, preset, T0 + 3700)
        async with again.run_test(size=SIZE) as pilot:
            await loaded(pilot, 80)
            await until(pilot, lambda: again.babysitter is not None and again.babysitter.finalized)
            await pilot.pause(0.5)
        reposted = [json.loads(r.body) for r in hook.requests[len(posts) :]]
    finally:
        hook.close()
    finals = [p for p in posts if "VERDICT" in p["title"]]
    assert len(finals) == 1 and "its final read is in (step 80)" in finals[0]["text"]
    assert not [p for p in reposted if "VERDICT" in p["title"]]
    assert "nan-loss" not in rules and "stall" not in rules
    said = " ".join(f"{p['title']} {p.get('text', '')}" for p in posts)
    assert "nan" not in said.lower() and "stall" not in said and "engine.out.log" not in said
    assert not [p for p in posts if p["level"] == "alert"]
    (poll,) = [p for p in posts if "first poll" in p["title"]]
    assert "data wait" not in poll["text"]  # the engine's column: not this run's


async def test_a_foreign_run_shows_its_own_columns_and_is_reviewed_and_exported(done, tmp_path):
    pytest.importorskip("matplotlib")
    folder, preset = copy(done[0], tmp_path), done[1]
    app = app_on(folder, preset, T0 + 81)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 80)
        await until(
            pilot, lambda: 80 in app.session.store.probes and app.view.latest.read_step == 80
        )
        await pilot.press("p")
        await pilot.pause()
        table = app.screen.query_one(ProbesTable)  # the engine's columns: not this run's
        assert [str(c.label) for c in table.columns.values()] == ["step", "eval/chunk_mae", "delta"]
        assert table.get_row("80") == ["80", "3.4000", "+0.8000"]
        await pilot.press("v")
        await pilot.pause()
        card = text(app.screen.query_one(LedgerPanel).query_one("#ledger"))
        assert "corroboration (not gates): eval rises monotonically: yes" in card
        assert "train-slice" not in card
        await pilot.press("a", "y")
        await until(pilot, lambda: "review.jsonl" in app.review_status)
        assert "chain intact" in app.review_status
        await pilot.press("e")
        await until(pilot, lambda: "wrote" in app.review_status, timeout=60)
    (line,) = (folder / "review.jsonl").read_text().splitlines()
    assert json.loads(line)["action"] == "accept"
    assert json.loads(line)["read_step"] == 80
    doc = json.loads((folder / "verdict.json").read_text())
    assert doc["read_step"] == 80 and doc["provisional"] is False


async def test_the_runs_list_shows_an_attached_foreign_run_and_enter_follows_it(
    done, tmp_path, registry_path
):
    from fontaine_tui.commands.attach import remember
    from fontaine_tui.core.follow.foreign import ForeignRun
    from fontaine_tui.core.runs.registry import Registry
    from tests.console.conftest import console, make_run

    folder, preset = copy(done[0], tmp_path), done[1]
    remember(str(folder), preset, "attach")  # as `fontaine-tui attach` registers it
    app = console(make_run(tmp_path / "ours", upto=500), registry=Registry(registry_path))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 500)
        await pilot.press("r")
        table = app.screen.query_one("#runs-table")
        await until(pilot, lambda: table.row_count == 1 and table.get_row_at(0)[3] == "ended")
        table.focus()
        await pilot.press("enter")
        await loaded(pilot, 80)  # its own files, through its format
        assert isinstance(app.session.source, ForeignRun)
        assert app.session.preset.sha256 == preset.sha256 and app.session.folder == folder
        await until(pilot, lambda: app.view.status == "attached (ended)")


async def test_a_run_followed_while_summarywriter_writes_it_ends_with_no_alert(
    tmp_path, monkeypatch
):
    """The real writer writes while the console follows: no alert is posted on the way, and
    the run reads ended, not stalled, once its final read is in."""
    import asyncio
    import threading
    import time

    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    from tests.core.log.formats.conftest import EVAL, loss

    folder = tmp_path / "live"
    preset = load_preset(str(foreign_preset(tmp_path, 'kind = "tensorboard"')))
    hook = Hook()
    monkeypatch.setenv("FONTAINE_NOTIFY", hook.url("/hooks/K2"))
    w = SummaryWriter(str(folder), flush_secs=1)
    w.add_scalar("train/loss", loss(1), 1)
    w.flush()

    def write() -> None:
        for step in range(2, 81):
            w.add_scalar("train/loss", loss(step), step)
            if step in EVAL:
                w.add_scalar("eval/chunk_mae", EVAL[step], step)
                w.flush()
            time.sleep(0.02)
        w.close()

    app = make_app(
        source=ForeignRun(folder, SourceSpec("tensorboard"), poll_s=0.05),
        preset=preset,
        kind="attach",
        babysit_host="here",
        frame_s=0.05,
    )
    try:
        async with app.run_test(size=SIZE) as pilot:
            writer = threading.Thread(target=write)
            writer.start()
            await until(
                pilot,
                lambda: app.view is not None and app.view.status == "attached (ended)",
                timeout=30,
            )
            await asyncio.to_thread(writer.join)
            await pilot.pause(0.5)
            rules = {x.rule for x in app.session.warnings}
        posts = [json.loads(r.body) for r in hook.requests]
    finally:
        hook.close()
    assert app.session.store.last_step == 80 and "stall" not in rules
    assert "nan-loss" not in rules
    assert not [p for p in posts if p["level"] == "alert"]
