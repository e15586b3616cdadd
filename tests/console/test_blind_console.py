"""Blinded monitoring in the console: no screen shows the rule's read before the endpoint.

The real replay of a run cut at step 750 of 1000, read with demosonly_1gpu plus `blind = true`:
the verdict and probes screens show BLINDED and none of the read's numbers or its class; `u`
asks why, appends an `unblind` line naming who to review.jsonl, and then the read shows."""

from __future__ import annotations

import json

import pytest

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.screens.dialogs import NoteDialog
from fontaine_tui.widgets.chart import Chart
from fontaine_tui.widgets.verdict_panel import VerdictBanner
from tests.commands.test_blind import SECRETS, blind_preset
from tests.console.conftest import SIZE, console, loaded, make_run, text


def screen_text(app) -> str:
    """Every widget's text on the current screen, the charts' drawn cells included."""
    return "\n".join(text(w) for w in app.screen.query("*") if w.display and hasattr(w, "render"))


async def test_the_console_hides_the_read_until_unblinded(tmp_path, monkeypatch):
    monkeypatch.setenv("FONTAINE_USER", "carol")
    folder = tmp_path / "run"
    app = console(make_run(folder, upto=750), preset=load_preset(blind_preset(tmp_path)))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 750)
        shown = screen_text(app)
        assert "step 750" in shown  # the monitor: health stays
        for mode in ("v", "p"):
            await pilot.press(mode)
            await pilot.pause()
            shown = screen_text(app)
            assert "BLINDED" in shown, mode
            for secret in SECRETS:
                assert secret not in shown, (mode, secret)
        assert not app.screen.query_one("#probes-chart", Chart).display
        assert app.check_action("unblind", ()) is True  # its key shows while the read is hidden

        await pilot.press("v", "a")  # an accept of a hidden read is refused
        await pilot.pause()
        assert "blinded" in app.review_status and not (folder / "review.jsonl").exists()
        await pilot.press("n")  # a note is taken, and records what was seen: BLINDED
        await pilot.pause()
        await pilot.press(*"odd loss", "enter")
        await pilot.pause()
        note = json.loads((folder / "review.jsonl").read_text())
        assert (note["action"], note["verdict"], note["delta"]) == ("note", "BLINDED", None)
        assert not any(s in app.review_status for s in SECRETS)
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.screen, NoteDialog)
        await pilot.press(*"sponsor asked", "enter")
        await pilot.pause()
        await pilot.pause()
        line = json.loads((folder / "review.jsonl").read_text().splitlines()[1])
        assert (line["action"], line["who"], line["note"]) == ("unblind", "carol", "sponsor asked")
        banner = text(app.screen.query_one(VerdictBanner))
        assert "AMBIGUOUS" in banner and "BLINDED" not in banner
        assert "by carol at step 750: sponsor asked" in screen_text(app)
        assert app.check_action("unblind", ()) is False
        assert (line["verdict"], line["delta"]) == ("BLINDED", None)  # the look, not the read


async def test_a_look_shows_the_read_it_recorded_and_no_later_one(tmp_path, monkeypatch):
    """Unblinded at step 250, the console hides the reads of the probes that come later."""
    from fontaine_tui.core.follow.local import LocalRun
    from tests.logs import records_upto, write_log

    monkeypatch.setenv("FONTAINE_USER", "erin")
    folder = tmp_path / "run"
    log = make_run(folder, upto=300)
    app = console(log, preset=load_preset(blind_preset(tmp_path)), source=LocalRun(folder))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 300)
        await pilot.press("v", "u")
        await pilot.pause()
        await pilot.press(*"early look", "enter")
        await pilot.pause()
        assert "BLINDED" not in text(app.screen.query_one(VerdictBanner))
        write_log(log, records_upto(750))  # the run goes on: probes at 500 and 750
        await loaded(pilot, 750)
        assert "BLINDED" in text(app.screen.query_one(VerdictBanner))
        assert not any(s in screen_text(app) for s in SECRETS)


async def test_posts_and_polls_stay_blinded_whatever_a_console_unblinds(tmp_path, monkeypatch):
    """A real webhook on 127.0.0.1: the probe post and the first poll carry BLINDED only."""
    from fontaine_tui.console import make_app
    from fontaine_tui.core.follow.local import LocalRun
    from fontaine_tui.core.runfolder import RunFolder
    from fontaine_tui.core.verdict.prereg import freeze
    from tests.console.conftest import until
    from tests.core.notify.server import Hook
    from tests.logs import T0

    hook = Hook()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("FONTAINE_NOTIFY", hook.url("/hooks/BLIND1"))
    preset = load_preset(blind_preset(tmp_path))
    folder = tmp_path / "run"
    make_run(folder, upto=750)
    freeze(RunFolder(folder), preset, ["launch"], "here", now=T0 - 10)
    app = make_app(
        source=LocalRun(folder),
        preset=preset,
        clock=lambda: T0 + 376,
        kind="attach",
        babysit_host="here",
        frame_s=0.05,
    )
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 750)
        await until(pilot, lambda: len(hook.requests) >= 2)
        await pilot.pause(0.3)
    bodies = [r.body.decode() for r in hook.wait_for(2)]
    posts = [json.loads(b) for b in bodies]
    assert any("probe at step 750" in p["title"] for p in posts)
    assert all("BLINDED" in b for b in bodies if "probe at step" in b)
    for secret in SECRETS:
        assert not any(secret in b for b in bodies), secret
    polls = [json.loads(x) for x in (folder / "babysit.jsonl").read_text().splitlines()]
    first = next(p for p in polls if p.get("kind") == "first")
    assert first["verdict"] == "BLINDED" and "BLINDED" in first["headline"]
    hook.close()


async def test_the_monitor_counts_a_blinded_runs_conflicting_probes_naming_no_step(tmp_path):
    """A probe logged twice with other values: a read at its step is UNDECIDABLE, so while the
    read is hidden the warnings count the conflict as the verdict's card does, naming neither
    its step, its lines nor its values; without the blind they name the step and the lines."""
    from fontaine_tui.widgets.warnings_panel import WarningsPanel
    from tests.console.conftest import until
    from tests.logs import T0, dumps, probe

    for blinded in (True, False):
        folder = tmp_path / f"run-{blinded}"
        log = make_run(folder, upto=750)
        with log.open("a") as fh:
            fh.write(dumps(probe(750, T0 + 380, 3.6, 3.3)) + "\n")
        preset = load_preset(blind_preset(tmp_path, blinded))
        app = console(log, preset=preset)
        async with app.run_test(size=SIZE) as pilot:
            await loaded(pilot, 750)
            await until(pilot, lambda: bool(app.session.store.conflicts))  # noqa: B023
            await pilot.pause(0.2)
            panel = text(app.screen.query_one(WarningsPanel))
        if blinded:
            assert "1 conflicting probe(s)" in panel and "hidden (blinded)" in panel, panel
            assert "750" not in panel and "line" not in panel and "3.6" not in panel, panel
            assert not any(s in panel for s in SECRETS)
        else:
            assert "conflicting probes for step 750" in panel, panel


@pytest.mark.parametrize("blinded", [True, False], ids=["blinded", "open"])
async def test_the_warnings_count_another_trainers_values_not_numbers_while_hidden(
    tmp_path, monkeypatch, blinded
):
    """Another trainer's run whose rule metric is `true` at the latest probe (a read there is
    UNDECIDABLE): while the read is hidden the warnings count the value naming no key, step or
    value, and the posts (a real webhook on 127.0.0.1) say nothing of it; without the blind
    the warnings name it."""
    from fontaine_tui.console import make_app
    from fontaine_tui.core.follow.foreign import ForeignRun
    from fontaine_tui.core.log.formats.source import SourceSpec
    from fontaine_tui.widgets.warnings_panel import WarningsPanel
    from tests.commands.test_not_number_blind import HIDDEN_COUNT, TOLD, blind_foreign_run
    from tests.console.conftest import until
    from tests.core.notify.server import Hook

    hook = Hook()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("FONTAINE_NOTIFY", hook.url("/hooks/ODD1"))
    root = blind_foreign_run(tmp_path, blind=blinded)
    app = make_app(
        source=ForeignRun(root, SourceSpec("jsonl"), poll_s=0.05),
        preset=load_preset(str(tmp_path / "foreign.toml")),
        clock=lambda: 1_000_000.0,
        kind="attach",
        babysit_host="here",
        frame_s=0.05,
    )
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 60)
        await until(pilot, lambda: "eval value(s)" in text(app.screen.query_one(WarningsPanel)))
        panel = text(app.screen.query_one(WarningsPanel))
        if blinded:
            await until(pilot, lambda: len(hook.requests) >= 2)
            await pilot.pause(0.3)
    if not blinded:
        assert TOLD in panel, panel
        return
    assert f"{HIDDEN_COUNT} until the endpoint" in panel, panel
    bodies = [r.body.decode() for r in hook.requests]
    for said in (panel, *bodies):
        assert "true (a boolean)" not in said and "at step 60:" not in said, said
        assert "UNDECIDABLE" not in said, said
