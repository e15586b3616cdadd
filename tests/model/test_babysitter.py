"""The babysitter over a real session and a real webhook on 127.0.0.1: what a tick sends,
polls at the preset's cadence with an injected clock, a failed delivery as a panel warning,
one watcher per run, and the final read when the log ends."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import pytest

from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.core.watch.babysit import read_polls
from fontaine_tui.model.babysitter import NOTIFY_RULE, Babysitter
from fontaine_tui.model.session import Session
from tests.core.notify.server import dead_port
from tests.logs import T0, records_upto, write_log

MIN = 60.0


@pytest.fixture(autouse=True)
def no_user_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)


def run_folder(tmp_path: Path, upto: int) -> Path:
    root = tmp_path / "run"
    root.mkdir(exist_ok=True)
    if not (root / "prereg.json").exists():
        freeze(RunFolder(root), load_preset("demosonly_1gpu"), ["launch"], "here", now=T0 - 10)
    write_log(root / "train_log.jsonl", records_upto(upto))
    return root


async def session_at(root: Path) -> Session:
    s = Session(LocalRun(root), load_preset("demosonly_1gpu"), "attach", None, root)
    await s.read_ledger()
    await read_more(s)
    return s


async def read_more(s: Session) -> None:
    """The log as it stands now (what the follower would have applied)."""
    s.store = load_log(s.folder / "train_log.jsonl")
    s.version += 1


def test_ticks_send_polls_probes_and_warnings_at_the_cadence(tmp_path, hook, monkeypatch):
    monkeypatch.setenv("FONTAINE_NOTIFY", hook.url("/h/TOKEN123"))
    root = run_folder(tmp_path, 120)

    async def main():
        s = await session_at(root)
        now = T0 + 61.0  # a second after step 120's record
        sitter = Babysitter.for_session(
            s, "test", "here", print, clock=lambda: now, auto_final=True
        )
        s.update_warnings(None, now)
        sitter.tick(None, now)  # the first poll: there is an s/step to read
        assert sitter.polls == 1
        sitter.tick(None, now + 29 * MIN)  # inside the 30 minutes: nothing
        assert sitter.polls == 1
        write_log(root / "train_log.jsonl", records_upto(300))  # a probe at 250
        await read_more(s)
        s.update_warnings(None, now + 30 * MIN)
        sitter.tick(None, now + 30 * MIN)
        assert sitter.polls == 2
        write_log(root / "train_log.jsonl", records_upto(1000))  # to the end
        await read_more(s)
        s.update_warnings(None, now + 31 * MIN)
        sitter.tick(None, now + 31 * MIN)
        assert sitter.finalized
        assert sitter.close() == []
        await s.source.close()
        return s

    s = asyncio.run(main())
    got = [json.loads(r.body) for r in hook.requests]  # close() waited for the deliveries
    titles = [p["title"] for p in got]
    run = s.given_preset.run_name
    assert titles[0] == f"{run}: first poll"
    assert f"{run}: stall" in titles  # 29 minutes without a record, said once
    assert f"{run}: poll 2" in titles
    assert [p["step"] for p in got if "probe at step" in p["title"]] == [250, 500, 750, 1000]
    assert titles[-1].startswith(f"{run}: VERDICT ")
    assert "the log ended at step 1000" in got[-1]["text"]
    polls = read_polls(root / "babysit.jsonl")
    assert [(p["kind"], p["step"]) for p in polls] == [("first", 120), ("cadence", 300)]
    assert polls[0]["s_per_step"] == 0.5 and polls[0]["watcher"] == "test"
    for path in root.iterdir():  # the token is in no file the run folder holds
        if path.is_file():
            assert b"TOKEN123" not in path.read_bytes(), path


def test_a_failed_delivery_is_a_warning_in_the_panel(tmp_path, monkeypatch):
    url = f"http://127.0.0.1:{dead_port()}/hooks/SECRET99"
    monkeypatch.setenv("FONTAINE_NOTIFY", url)
    root = run_folder(tmp_path, 120)

    async def main():
        s = await session_at(root)
        said: list[str] = []
        sitter = Babysitter.for_session(s, "test", "here", said.append)
        assert sitter.notices is not None
        notifier = sitter.notices.notifier  # refused at once: no back-off to wait out
        notifier.policy = dataclasses.replace(notifier.policy, tries=1)
        s.update_warnings(None, T0 + 61)
        sitter.tick(None, T0 + 61)
        sitter.notices.notifier.flush(10)
        s.update_warnings(None, T0 + 62)
        sitter.tick(None, T0 + 62)
        sitter.close()
        await s.source.close()
        return s, said

    s, said = asyncio.run(main())
    [w] = [w for w in s.warnings if w.rule == NOTIFY_RULE]
    assert w.severity == "warn" and "notification(s) failed" in w.message
    assert "SECRET99" not in w.message and "SECRET99" not in " ".join(said)
    # it stays through the next evaluation of the rules
    s.update_warnings(None, T0 + 300)
    assert any(x.rule == NOTIFY_RULE for x in s.warnings)


def test_a_second_watcher_shows_but_does_not_post(tmp_path, hook, monkeypatch):
    monkeypatch.setenv("FONTAINE_NOTIFY", hook.url())
    root = run_folder(tmp_path, 120)

    async def main():
        s1, s2 = await session_at(root), await session_at(root)
        said: list[str] = []
        first = Babysitter.for_session(s1, "console", "here", print)
        second = Babysitter.for_session(s2, "babysit", "here", said.append)
        for s, sitter in ((s1, first), (s2, second)):
            s.update_warnings(None, T0 + 61)
            sitter.tick(None, T0 + 61)
        assert first.polls == 1 and second.polls == 0 and second.notices is None
        assert said and said[0].startswith("babysat by pid ")
        first.close()
        third = Babysitter.for_session(s2, "babysit", "here", print)  # free again
        assert third.notices is not None
        third.close()
        for s in (s1, s2):
            await s.source.close()

    asyncio.run(main())
    assert [json.loads(r.body)["title"] for r in hook.wait_for(1)] == [
        "grasp_sft_v2_demosonly_1gpu_disc: first poll"
    ]
    assert len(read_polls(root / "babysit.jsonl")) == 1


def test_the_gpu_hours_gate_is_posted_and_its_clock_stops_at_the_end(tmp_path, hook, monkeypatch):
    monkeypatch.setenv("FONTAINE_NOTIFY", hook.url("/h/TOKEN124"))
    root = run_folder(tmp_path, 600)

    def on_a_gpu(upto: int) -> None:  # the engine's meta line: one CUDA device
        recs = records_upto(upto)
        recs[0] = {**recs[0], "device": "cuda:0", "world_size": 1}
        write_log(root / "train_log.jsonl", recs)

    on_a_gpu(600)

    async def main():
        s = await session_at(root)
        later = T0 + 12.5 * 3600  # 12.5 h since the launch on one GPU: past the 12 h gate
        sitter = Babysitter.for_session(s, "test", "here", print, clock=lambda: later)
        s.update_warnings(None, later)
        sitter.tick(None, later)
        assert {w.rule: w.severity for w in s.warnings}.get("gpu-hours") == "alert", s.warnings
        assert sitter.close() == []
        on_a_gpu(1000)  # the log ends at T0 + 501
        await read_more(s)
        s.update_warnings(None, later)
        assert "gpu-hours" not in {w.rule for w in s.warnings}  # the clock stopped at the end
        await s.source.close()
        return s

    s = asyncio.run(main())
    posted = [json.loads(r.body) for r in hook.requests]
    gate = [p for p in posted if p["title"] == f"{s.given_preset.run_name}: GPU-hours gate"]
    assert len(gate) == 1 and gate[0]["level"] == "alert", posted
    assert "reached the gate 12" in gate[0]["text"]
