"""A `checkpoint-N/` removed between listing and reading, as Trainer's `save_total_limit`
does while it saves: the cold read and the follower list the checkpoints again, never a
traceback, a "no such file" or a "waiting" note. A real writer thread saves a checkpoint,
then removes the one before, all through the reads."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.formats.source import SourceSpec


def _state(step: int) -> str:
    history = []
    for s in range(10, step + 1, 10):
        history += [{"step": s, "loss": 1.0}, {"step": s, "eval_chunk_mae": 3.0 - s / 1000}]
    return json.dumps({"global_step": step, "log_history": history})


@pytest.fixture
def rotating(tmp_path: Path) -> Iterator[Path]:
    """A run folder where checkpoint-N/ is saved every 2 ms and the one before removed."""
    root = tmp_path / "run"
    (root / "checkpoint-10").mkdir(parents=True)
    (root / "checkpoint-10" / "trainer_state.json").write_text(_state(10))
    stop = threading.Event()

    def save() -> None:
        n = 2
        while not stop.is_set():
            new = root / f"checkpoint-{n * 10}"
            new.mkdir()
            (new / "tmp").write_text(_state(min(n, 100) * 10))
            os.replace(new / "tmp", new / "trainer_state.json")
            shutil.rmtree(root / f"checkpoint-{(n - 1) * 10}")
            n += 1
            time.sleep(0.002)

    writer = threading.Thread(target=save, daemon=True)
    writer.start()
    try:
        yield root
    finally:
        stop.set()
        writer.join(5)


def test_the_cold_read_lists_again(rotating: Path) -> None:
    failures = []
    for _ in range(1500):
        try:
            loaded = load_source(rotating, SourceSpec("hf_trainer"))
        except Exception as exc:  # noqa: BLE001 - what is counted is any failure at all
            failures.append(f"{type(exc).__name__}: {exc}")
            continue
        assert loaded.store.probes, "a listed state read with its probes"
    assert not failures, f"{len(failures)} of 1500 reads failed, e.g. {failures[0]}"


def test_the_follower_lists_again(rotating: Path) -> None:
    notes: list[str] = []
    batches = [0]

    async def follow() -> None:
        run = ForeignRun(rotating, SourceSpec("hf_trainer"), poll_s=0.001)

        async def take() -> None:
            async for batch in run.follow():
                batches[0] += 1
                if batch.note:
                    notes.append(batch.note)

        try:
            await asyncio.wait_for(take(), 3)  # some 3000 reads of a state being rotated
        except TimeoutError:
            pass
        await run.close()

    asyncio.run(follow())
    assert batches[0] >= 1  # the state was read
    assert not [n for n in notes if "waiting" in n or "No such file" in n], notes[:3]
