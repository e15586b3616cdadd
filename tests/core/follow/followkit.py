"""Test helpers: drive a RunSource as the console does and record what it delivered."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

from fontaine_tui.core.follow.base import Batch, RunSource
from fontaine_tui.core.log.store import RunStore


def train_line(step: int, **extra: object) -> bytes:
    rec = {
        "kind": "train",
        "step": step,
        "time": 1700000000.0 + step,
        "loss": 1.0 / (step + 1),
        "ar_ce": 0.5,
        "flow_loss": 0.25,
        "lr": 1e-4,
        "grad_norm": 1.5,
        "step_s": 0.5,
        "data_s": 0.01,
        "samples": step * 16,
        **extra,
    }
    return json.dumps(rec, separators=(",", ":")).encode() + b"\n"


def event_line(step: int, event: str, detail: str = "") -> bytes:
    rec = {
        "kind": "event",
        "step": step,
        "time": 1700000000.0 + step,
        "event": event,
        "detail": detail,
    }
    return json.dumps(rec, separators=(",", ":")).encode() + b"\n"


class Collector:
    """What the consumer holds, as the console holds it: every line and record delivered
    (a new segment keeps them all), each line with its segment and number in it."""

    def __init__(self, source: RunSource, name: str = "train_log.jsonl") -> None:
        self.source, self.name = source, name
        self.store = RunStore()
        self.lines: list[tuple[int, bytes]] = []
        self.segment_of: list[int] = []  # for each of self.lines: how many segments began before
        self.records: list[object] = []
        self.batches: list[Batch] = []
        self.notes: list[str] = []
        self.history: list[object] = []  # every record step delivered, ("SEGMENT", name) at each
        self.segments = 0
        self.task: asyncio.Task | None = None

    async def _run(self) -> None:
        async for batch in self.source.follow(self.name):
            self.batches.append(batch)
            if batch.segment:
                self.segments += 1
                self.history.append(("SEGMENT", batch.name))
                self.store.begin_segment(batch.name, batch.note)
            if batch.note:
                self.notes.append(batch.note)
            for i, raw in enumerate(batch.lines):
                self.lines.append((batch.first_line + i, raw))
                self.segment_of.append(self.segments)
                if raw.strip():
                    rec = self.store.add_line(raw, batch.first_line + i)
                    if rec is not None:
                        self.records.append(rec)
                        self.history.append(rec.step)

    def start(self) -> Collector:
        self.task = asyncio.create_task(self._run())
        return self

    async def stop(self) -> None:
        await self.source.close()
        if self.task is not None:
            try:
                await asyncio.wait_for(self.task, 10)
            except asyncio.TimeoutError:
                self.task.cancel()
        if self.task is not None and self.task.done() and not self.task.cancelled():
            exc = self.task.exception()
            if exc is not None:
                raise exc

    @property
    def steps(self) -> list[int]:
        return [r.step for r in self.records]

    @property
    def texts(self) -> list[bytes]:
        return [raw for _, raw in self.lines if raw.strip()]

    def numbering_ok(self) -> bool:
        """Within each segment, lines are numbered 1, 2, 3, ... (none lost, none doubled)."""
        expect: dict[int, int] = {}
        for (n, _), seg in zip(self.lines, self.segment_of, strict=True):
            if n != expect.get(seg, 1):
                return False
            expect[seg] = n + 1
        return True

    async def until(self, pred: Callable[[], bool], timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while not pred():
            if self.task is not None and self.task.done():
                self.task.result()
                raise AssertionError("follower ended")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; steps={self.steps[-20:]} notes={self.notes}")
            await asyncio.sleep(0.005)

    async def quiet(self, seconds: float = 0.15) -> None:
        """Let the follower run a little with nothing to wait for (to see nothing extra arrives)."""
        await asyncio.sleep(seconds)


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)
