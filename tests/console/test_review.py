"""Review: accept / flag / note append hash-chained lines; tampering is found; export."""

from __future__ import annotations

import hashlib
import json
import sys

import pytest

from fontaine_tui.core.charts.probes import probes_chart
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.run.evidence import seen_reads
from fontaine_tui.core.seal import export as exporter
from fontaine_tui.core.verdict import review
from fontaine_tui.core.verdict.rules import compute_verdict, verdict_series
from fontaine_tui.screens.dialogs import NoteDialog
from tests.console.conftest import CLOCK, SIZE, console, loaded, make_run, until


async def test_accept_flag_note_chain_and_tamper(tmp_path):
    folder = tmp_path / "run"
    app = console(make_run(folder, upto=750))
    path = folder / "review.jsonl"
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 750)
        await pilot.press("v", "a", "y")
        await pilot.press("left", "f", "y")  # flag the read as it stood at 500
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, NoteDialog)
        await pilot.press(*"[bold]ask owner[/]", "enter")
        await pilot.pause()
        lines = path.read_bytes().splitlines()
        assert [json.loads(x)["action"] for x in lines] == ["accept", "flag", "note"]
        docs = [json.loads(x) for x in lines]
        assert [(d["verdict"], d["read_step"], d["provisional"]) for d in docs] == [
            ("AMBIGUOUS", 750, True),
            ("HEALTHY", 500, True),
            ("HEALTHY", 500, True),
        ]
        assert docs[2]["note"] == "[bold]ask owner[/]"
        assert {d["time"] for d in docs} == {"2026-08-17T21:03:20Z"}  # the injected clock
        assert docs[0]["prev"] == review.GENESIS
        for before, doc in zip(lines, docs[1:], strict=False):
            assert doc["prev"] == hashlib.sha256(before).hexdigest()
        assert review.verify(path).ok and "3 line(s), chain intact" in app.review_status

        # an edit by hand to line 2 is found: the next action says so and appends nothing
        tampered = lines[1].replace(b'"flag"', b'"accept"')
        path.write_bytes(b"\n".join([lines[0], tampered, lines[2]]) + b"\n")
        before = path.read_bytes()
        check = review.verify(path)
        assert (check.bad_line, check.ok) == (2, False)
        await pilot.press("a", "y")
        await pilot.pause()
        assert "not recorded: review.jsonl line 2: content does not match" in app.review_status
        assert path.read_bytes() == before


async def test_a_note_holding_a_token_is_refused_and_nothing_appended(tmp_path):
    """A note is recorded as typed: one holding a credential is refused (core/secrets.py),
    the status says so with the token masked, and review.jsonl is not written."""
    folder = tmp_path / "run"
    app = console(make_run(folder, upto=750))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 750)
        await pilot.press("v", "n")
        await pilot.pause()
        assert isinstance(app.screen, NoteDialog)
        await pilot.press(*"ask ops --hub_token=Zq8xP2mK9vR4tL7w", "enter")
        await pilot.pause()
        assert "not recorded: " in app.review_status, app.review_status
        assert "looks like a credential" in app.review_status, app.review_status
        assert "Zq8x" not in app.review_status
        assert not (folder / "review.jsonl").exists()


async def test_a_review_key_asks_before_it_appends_and_says_what_it_wrote(tmp_path):
    """A stray a or f writes nothing: only y after it appends, and the toast names the line
    and the file's full path."""
    from textual.widgets import Static

    folder = tmp_path / "run"
    app = console(make_run(folder, upto=750))
    path = folder / "review.jsonl"
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 750)
        await pilot.press("v", "a")
        await pilot.pause()
        assert not path.exists()  # asked, nothing written yet
        question = str(app.screen.query_one("#confirm-question", Static).render())
        assert question == f"Append 'accept' for AMBIGUOUS at step 750 (provisional) to {path}?"
        await pilot.press("a", "enter")  # the key again, then enter (Cancel has the focus)
        await pilot.pause()
        assert not app.screen.query("#confirm-question") and not path.exists()
        assert app.review_status == "accept: cancelled, nothing appended"
        await pilot.press("f", "escape", "f", "n")
        await pilot.pause()
        assert not path.exists() and app.review_status == "flag: cancelled, nothing appended"

        app.clear_notifications()
        await pilot.press("left", "f")  # the read at 500, as it stood when f was pressed
        await pilot.pause()
        assert "HEALTHY at step 500 (provisional)" in str(
            app.screen.query_one("#confirm-question", Static).render()
        )
        await pilot.press("y")
        await pilot.pause()
        (line,) = path.read_text().splitlines()
        assert (json.loads(line)["action"], json.loads(line)["read_step"]) == ("flag", 500)
        said = f"appended line 1 to {path}: flag HEALTHY at step 500 (provisional)"
        assert app.review_status.startswith(said)
        assert [n.message for n in app._notifications if said in n.message]  # the toast


def _verdict(tmp_path):
    store = load_log(make_run(tmp_path / "v", upto=1000))
    from fontaine_tui.core.preset.find import load_preset

    return compute_verdict(store, load_preset("demosonly_1gpu"))


def test_chain_finds_removed_and_rehashed_lines(tmp_path):
    v = _verdict(tmp_path)
    path = tmp_path / "review.jsonl"
    for i, action in enumerate(("accept", "flag", "note", "accept")):
        review.append(path, action, v, note=f"n{i}", clock=lambda: CLOCK)
    lines = path.read_bytes().splitlines()
    assert review.verify(path) == review.ChainCheck(4)

    path.write_bytes(b"\n".join([lines[0], lines[2], lines[3]]) + b"\n")  # line 2 removed
    check = review.verify(path)
    assert check.bad_line == 2 and "does not follow line 1" in check.reason

    doc = json.loads(lines[1])  # rewritten with a fresh self-hash: the next link breaks
    doc["note"] = "nothing to see"
    doc.pop("hash")
    doc["hash"] = hashlib.sha256(review._canonical(doc)).hexdigest()
    path.write_bytes(b"\n".join([lines[0], review._canonical(doc), lines[2], lines[3]]) + b"\n")
    check = review.verify(path)
    assert check.bad_line == 3 and "line 3: does not follow line 2" in check.reason

    path.write_bytes(b"\n".join([lines[0], b"{not json", *lines[2:]]) + b"\n")
    assert review.verify(path).bad_line == 2
    with pytest.raises(ValueError):
        review.append(path, "approve", v)


async def test_export_writes_verdict_json_and_chart(tmp_path):
    pytest.importorskip("matplotlib")
    folder = tmp_path / "run"
    app = console(make_run(folder))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await pilot.press("v", "e")
        await until(pilot, lambda: "wrote" in app.review_status, timeout=60)
    doc = json.loads((folder / "verdict.json").read_text())
    expected = compute_verdict(app.session.store, app.session.preset).to_json()
    assert doc["review"] == {
        "file": "review.jsonl",
        "lines": 0,
        "head": review.GENESIS,  # no prereg.json beside this log
        "intact": True,
        "broken": "",
        "unblinded": [],
    }
    assert doc == json.loads(json.dumps({**expected, "review": doc["review"]}))
    assert doc["verdict"] == "AMBIGUOUS" and doc["provisional"] is False
    png = (folder / exporter.CHART_NAME).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert "disc_overlay.png" in app.review_status


def test_export_without_matplotlib_says_how_to_get_it(tmp_path, monkeypatch):
    v = _verdict(tmp_path)
    store = load_log(tmp_path / "v" / "train_log.jsonl")
    from fontaine_tui.core.preset.find import load_preset

    preset = load_preset("demosonly_1gpu")
    spec = probes_chart(seen_reads(store, verdict_series(store, preset), False), preset, v, False)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    result = exporter.export(tmp_path, v, spec)
    assert result.chart_path is None
    assert "pip install 'fontaine-tui[chart]'" in result.chart_message
    assert json.loads((tmp_path / "verdict.json").read_text())["verdict"] == "AMBIGUOUS"
    assert not (tmp_path / exporter.CHART_NAME).exists()


async def test_export_key_without_matplotlib_says_how_to_get_it(tmp_path, monkeypatch):
    folder = tmp_path / "run"
    app = console(make_run(folder))
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await pilot.press("v", "e")
        await until(pilot, lambda: "wrote" in app.review_status, timeout=30)
    assert "pip install 'fontaine-tui[chart]'" in app.review_status
    assert (folder / "verdict.json").exists() and not (folder / exporter.CHART_NAME).exists()


async def test_opening_shows_a_broken_trail_and_a_review_key_appends_nothing(tmp_path):
    from fontaine_tui.core.follow.local import LocalRun
    from fontaine_tui.core.preset.find import load_preset
    from fontaine_tui.core.runfolder import RunFolder
    from fontaine_tui.core.verdict.prereg import freeze
    from fontaine_tui.widgets.verdict_panel import LedgerPanel, VerdictBanner
    from tests.console.conftest import text

    folder = tmp_path / "run"
    log = make_run(folder)
    preset = load_preset("demosonly_1gpu")
    freeze(RunFolder(folder), preset, ["engine"], "fixture-host", now=1_786_999_000)
    v = compute_verdict(load_log(log), preset)
    path = folder / "review.jsonl"
    for action in ("accept", "flag", "note"):
        review.append(path, action, v, clock=lambda: CLOCK)
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:2]))  # tail cut
    before = path.read_bytes()
    app = console(log, source=LocalRun(folder))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await pilot.press("v")
        panel = app.screen.query_one(LedgerPanel)
        await until(pilot, lambda: "REVIEW TRAIL BROKEN" in text(panel.query_one("#ledger")))
        shown = text(panel.query_one("#ledger"))
        assert "review.jsonl: holds 2 line(s) but 3 were recorded" in shown
        banner = text(app.screen.query_one(VerdictBanner))
        assert banner.startswith(app.view.latest.label) and "REVIEW TRAIL BROKEN" in banner
        await pilot.press("a", "y")
        await pilot.pause()
        assert app.review_status.startswith("not recorded: ")
        assert "holds 2 line(s) but 3 were recorded" in app.review_status
        assert "nothing was written" in app.review_status
    assert path.read_bytes() == before
