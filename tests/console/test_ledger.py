"""The verdict's ledger: prereg.json hash, launch time, amendments and whether each counts."""

from __future__ import annotations

import json

from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.ledger import declare_amendment
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.widgets.verdict_panel import LedgerPanel, VerdictBanner
from tests.console.conftest import SIZE, console, loaded, make_run, text, until
from tests.logs import RIGONLY_LIKE, SCALED_LIKE

LAUNCHED = 1_786_999_000.0


def _folder(tmp_path, preset):
    folder = tmp_path / "run"
    make_run(folder, probes=SCALED_LIKE)
    rf = RunFolder(folder)
    freeze(rf, preset, ["python", "-m", "fontaine_engine", "train"], "fixture-host", now=LAUNCHED)
    # declared after step 750 was seen: it would change the read, and is refused
    declare_amendment(rf, factor=2.0, last_step_seen=750, preset=preset, text="too late")
    return folder


async def test_ledger_shows_hash_launch_and_refused_late_amendment(tmp_path, preset):
    folder = _folder(tmp_path, preset)
    app = console(folder / "train_log.jsonl", source=LocalRun(folder))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await pilot.press("v")
        await pilot.pause()
        panel = app.screen.query_one(LedgerPanel)
        await until(pilot, lambda: "amendment 2" in text(panel.query_one("#ledger")))
        shown = text(panel.query_one("#ledger"))
        assert "matches prereg.json" in shown
        assert "launched 2026-08-17T20:36:40.000000Z" in shown
        assert "amendment 1 (scale, preset): applied" in shown
        assert "amendment 2 (scale, ledger" in shown and ": refused" in shown
        # the refused amendment changes nothing: the document's rule pair still disagrees
        assert text(app.screen.query_one(VerdictBanner)).startswith("AMBIGUOUS-BY-INSTRUMENT")


async def test_bounds_changed_after_launch_is_shown(tmp_path, preset):
    folder = _folder(tmp_path, preset)
    other = load_preset("smoke")  # not the preset frozen at launch
    app = console(folder / "train_log.jsonl", source=LocalRun(folder), preset=other)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.session.ledger.hash_ok is not None)
        await pilot.press("v")
        await pilot.pause()
        shown = text(app.screen.query_one(LedgerPanel).query_one("#ledger"))
        assert "differs from the frozen prereg.json" in shown
        assert "computing with the frozen bounds" in shown
        assert app.session.ledger.hash_ok is False
        assert app.session.preset.sha256 == preset.sha256  # the frozen one, not smoke


async def test_a_loosened_preset_is_a_warning_and_the_verdict_keeps_the_frozen_bounds(
    tmp_path, preset
):
    from tests.core.launch.conftest import preset_variant

    folder = tmp_path / "run"
    make_run(folder, probes=RIGONLY_LIKE)  # HEALTHY only under healthy_max 0.7
    freeze(
        RunFolder(folder),
        preset,
        ["python", "-m", "fontaine_engine", "train"],
        "fixture-host",
        now=LAUNCHED,
    )
    loose = load_preset(
        str(preset_variant(tmp_path, "demosonly_1gpu", name="loose", healthy_max="0.7"))
    )
    app = console(folder / "train_log.jsonl", source=LocalRun(folder), preset=loose)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.session.ledger.hash_ok is not None)
        await loaded(pilot, 1000)
        await pilot.press("v")
        await pilot.pause()
        ledger = app.session.ledger
        assert ledger.hash_ok is False
        assert "verdict.healthy_max: frozen 0.3, given 0.7" in ledger.hash_status
        assert app.session.preset.sha256 == preset.sha256
        banner = text(app.screen.query_one(VerdictBanner))
        assert not banner.startswith("HEALTHY"), banner
        assert app.view.latest.preset["sha256"] == preset.sha256


async def test_edited_prereg_is_caught(tmp_path, preset):
    folder = _folder(tmp_path, preset)
    doc = json.loads((folder / "prereg.json").read_text())
    doc["preset"]["verdict"]["healthy_max"] = 0.9  # loosened by hand after launch
    (folder / "prereg.json").write_text(json.dumps(doc))
    app = console(folder / "train_log.jsonl", source=LocalRun(folder))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.session.ledger.hash_ok is not None)
        assert app.session.ledger.hash_ok is False
        assert "prereg.json was edited" in app.session.ledger.hash_status


class _FarSide:
    """The replay source seen as a remote one: no local folder, only read_bytes/follow."""

    def __init__(self, log):
        from fontaine_tui.core.follow.replay import ReplayRun

        self._inner = ReplayRun(log)
        self.label = "ssh far:/runs/run"

    def follow(self, name="train_log.jsonl"):
        return self._inner.follow(name)

    async def read_bytes(self, name):
        return await self._inner.read_bytes(name)

    async def close(self):
        await self._inner.close()


async def test_ledger_is_read_through_a_source_without_a_local_folder(tmp_path, preset):
    folder = _folder(tmp_path, preset)
    app = console(folder / "train_log.jsonl", source=_FarSide(folder / "train_log.jsonl"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.session.ledger.hash_ok is not None)
        assert app.session.folder is None
        ledger = app.session.ledger
        assert ledger.hash_status == "matches prereg.json"
        assert [a.id for a in ledger.amendments] == [2]
        await loaded(pilot, 1000)
        checks = {a.id: a.status for a in app.view.latest.amendments}
        assert checks == {1: "applied", 2: "refused"}
        await pilot.press("v", "a")  # no local folder: the review says so, nothing is written
        await pilot.pause()
        assert "needs a run folder" in app.review_status
        assert not (folder / "review.jsonl").exists()


async def test_the_frozen_preset_keeps_its_launch_name(tmp_path, preset):
    folder = _folder(tmp_path, preset)
    app = console(folder / "train_log.jsonl", source=LocalRun(folder), preset=load_preset("smoke"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.session.ledger.hash_ok is not None)
        await loaded(pilot, 1000)
        assert app.session.preset.name == "demosonly_1gpu"
        assert app.view.preset.name == "demosonly_1gpu"  # what the header shows


async def ledger_text(pilot, app, needle: str) -> str:
    """The verdict mode's ledger panel once it shows `needle`, on one line."""
    await loaded(pilot, 1000)
    await pilot.press("v")
    await pilot.pause()
    panel = app.screen.query_one(LedgerPanel)
    await until(pilot, lambda: needle in text(panel.query_one("#ledger")))
    return " ".join(text(panel.query_one("#ledger")).split())


async def test_code_changed_under_the_run_shows_both_identities(tmp_path, preset):
    """prereg.json froze one engine code identity; a resume's meta record names another."""
    from tests.logs import meta, records_upto, write_log

    launched = {
        "code": {"sha256": "a" * 64, "git_commit": "1" * 40, "dirty": False},
        "data": {"fingerprint": "d" * 64, "root": "/data/corpus"},
    }
    resumed = {"sha256": "b" * 64, "git_commit": "1" * 40, "dirty": True}
    folder = tmp_path / "run"
    recs = records_upto(1000)
    first = {**recs[0], "code": launched["code"], "data": launched["data"]}
    again = {**meta(500), "code": resumed, "data": launched["data"]}
    cut = next(i for i, r in enumerate(recs) if r["step"] > 500)
    write_log(folder / "train_log.jsonl", [first, *recs[1:cut], again, *recs[cut:]])
    freeze(
        RunFolder(folder),
        preset,
        ["python", "-m", "fontaine_engine", "train"],
        "h",
        now=LAUNCHED,
        provenance=launched,
    )
    app = console(folder / "train_log.jsonl", source=LocalRun(folder))
    async with app.run_test(size=SIZE) as pilot:
        shown = await ledger_text(pilot, app, "changed under the run")
        assert (
            "WARNING: the code changed under the run: launched with git 111111111111, "
            "source sha256 aaaaaaaaaaaa; the log's meta at step 500"
        ) in shown
        assert "says git 111111111111 + uncommitted changes, source sha256 bbbbbbbbbbbb" in shown
        assert "data changed" not in shown  # the corpus is the same


async def test_a_broken_amendment_chain_is_shown_and_nothing_from_it_applies(tmp_path, preset):
    folder = _folder(tmp_path, preset)
    ledger = folder / "amendments.jsonl"
    ledger.write_text(ledger.read_text().replace('"factor":2.0', '"factor":0.5'))  # by hand
    app = console(folder / "train_log.jsonl", source=LocalRun(folder))
    async with app.run_test(size=SIZE) as pilot:
        shown = await ledger_text(pilot, app, "LEDGER:")
        assert (
            f"LEDGER: {ledger}:1: its content does not match its hash (edited); "
            "amendments from line 1 on are not applied"
        ) in shown
        assert "amendment 2" not in shown  # the edited line is not applied, nor shown as in force
        assert app.session.ledger.amendments == ()


async def test_the_declared_platform_delta_is_on_the_ledger(tmp_path, preset):
    """A [command] launcher's lines above its command block, frozen at launch, are shown."""
    from tests.logs import records_upto, write_log

    folder = tmp_path / "run"
    write_log(folder / "train_log.jsonl", records_upto(1000))
    delta = [
        "--- ref.sh",
        "+++ box.sh",
        "@@ -2 +2,2 @@",
        "-module load a",
        "+module load b",
        "+export NCCL_IB_DISABLE=1",
    ]
    freeze(
        RunFolder(folder),
        preset,
        ["bash", "box.sh"],
        "h",
        now=LAUNCHED,
        provenance={"platform_delta": delta},
    )
    app = console(folder / "train_log.jsonl", source=LocalRun(folder))
    async with app.run_test(size=SIZE) as pilot:
        shown = await ledger_text(pilot, app, "platform delta")
        assert (
            "platform delta (launcher above its command block, vs the reference): 3 "
            "line(s) -module load a +module load b +export NCCL_IB_DISABLE=1"
        ) in shown
