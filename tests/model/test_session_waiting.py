"""A follower's waiting note, kept by the session while the run's file is not there, is
cleared once the run's records arrive (issue 44): the engine's own LogWriter begins a foreign
JSONL run a moment after the follow begins, read by `apply` and record by record
(`apply_lines`)."""

from __future__ import annotations

import asyncio

import pytest

from engine.logwriter import LogWriter
from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.model.session import Session, waits


@pytest.mark.parametrize("by_line", [False, True])
def test_the_waiting_note_is_cleared_once_the_log_is_read(tmp_path, by_line):
    folder = tmp_path / "run"
    folder.mkdir()
    session = Session(
        ForeignRun(folder, SourceSpec("jsonl"), poll_s=0.05),
        load_preset("demosonly_1gpu"),
        "attach",
    )
    notes: list[str] = []

    async def go() -> None:
        follow = session.source.follow()
        try:
            async for batch in follow:
                if by_line:
                    list(session.apply_lines(batch))
                else:
                    session.apply(batch)
                notes.append(session.note)
                if session.note.startswith("waiting") and len(notes) == 1:
                    w = LogWriter(folder / "metrics.jsonl")
                    for step in range(1, 76):
                        w.write("train", step, loss=1.0 / step)
                if session.store.last_step == 75:
                    return
        finally:
            await follow.aclose()
            await session.source.close()

    asyncio.run(asyncio.wait_for(go(), 10))
    assert notes[0].startswith("waiting: "), notes
    assert session.store.last_step == 75
    assert not waits(session.note), session.note


def test_a_note_that_waits_is_told_from_one_that_does_not():
    assert waits("waiting: run: no events.out.tfevents.* event file here")
    assert waits("train_log.jsonl removed; waiting for it to reappear")
    assert not waits("train_log.jsonl appeared")
    assert not waits("stopping the run: SIGINT, then SIGTERM, then SIGKILL")
