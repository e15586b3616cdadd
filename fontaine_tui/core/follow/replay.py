"""Replay a finished run as if it were being written: as fast as possible or at a speed.

ReplayRun replays our log line by line, ForeignReplay another trainer's run as records (its
cold read, in step order). Unlike the live followers, `follow()` ends after the last line or
record (with an "end of replay" note), so a plain reader knows when to stop.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import CHUNK, Batch
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.log.lines import LINE_CAP, LineCutter
from fontaine_tui.core.log.oddvalues import NONE as NO_ODD
from fontaine_tui.core.log.read import segment_chunks
from fontaine_tui.core.log.records import Event, Probe, Record
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.runfolder import LOG, rotated_segments

_TIME = re.compile(rb'"time"\s*:\s*(-?[0-9][0-9.eE+-]*)')


def _stamp(line: bytes) -> float | None:
    m = _TIME.search(line)
    if m is None:
        return None
    try:
        return float(m.group(1))
    except ValueError:
        return None


class ReplayRun:
    """ReplayRun(log, speed=None): speed is a multiple of the log's own time stamps."""

    def __init__(
        self,
        log: str | Path,
        speed: float | None = None,
        line_cap: int = LINE_CAP,
        chunk: int = CHUNK,
    ) -> None:
        self.log = Path(log)
        if speed is not None and not speed > 0:
            raise InputError(f"--speed: expected a positive number, got {speed}")
        if not self.log.is_file():
            raise InputError(f"{self.log}: no such log file")
        self.speed, self.line_cap, self.chunk = speed, line_cap, chunk
        self.label = f"replay {self.log}"
        self.skipped_lines: dict[str, list[int]] = {}
        self._closed = asyncio.Event()

    async def read_bytes(self, name: str) -> bytes | None:
        try:
            return await asyncio.to_thread(read_whole, self.log.parent / name)
        except FileNotFoundError:
            return None

    async def close(self) -> None:
        self._closed.set()

    async def _chunks(self, path: Path) -> AsyncIterator[bytes]:
        chunks = segment_chunks(path, self.chunk)
        while not self._closed.is_set():
            data = await asyncio.to_thread(next, chunks, b"")
            if not data:
                return
            yield data

    async def follow(self, name: str = LOG) -> AsyncIterator[Batch]:
        """The log's rotated segments (oldest first), then the log, each a segment."""
        path = self.log if name in (LOG, self.log.name) else self.log.parent / name
        if not path.is_file():
            return
        clock = _Pacer(self.speed) if self.speed and path == self.log else None
        files = [*rotated_segments(path), path] if path == self.log else [path]
        for k, part in enumerate(files):
            if len(files) > 1:
                yield Batch([], 1, True, f"replaying {part.name}", 0, part.name)
            async for batch in self._replay(part, name, clock, final=k < len(files) - 1):
                yield batch
            if self._closed.is_set():
                return
        yield Batch([], 1, note=f"end of replay ({path.name})")

    async def _replay(
        self, path: Path, name: str, clock: _Pacer | None, final: bool
    ) -> AsyncIterator[Batch]:
        cutter = LineCutter(self.line_cap)
        skipped = self.skipped_lines.setdefault(name, [])
        async for data in self._chunks(path):
            lines, first, long = cutter.feed(data)
            skipped += long
            note = cutter.skip_note(long)
            if clock is None:
                yield Batch(lines, first, False, note, cutter.offset)
                await asyncio.sleep(0)
                continue
            start = 0
            for i, line in enumerate(lines):
                wait = clock.wait_for(_stamp(line))
                if wait > 0:
                    if i > start:
                        yield Batch(lines[start:i], first + start, False, note)
                        note = ""
                    start = i
                    if await self._sleep(wait):
                        return
            yield Batch(lines[start:], first + start, False, note, cutter.offset)
        if final:  # a rotated segment is finished: its torn last line is a line
            lines, first = cutter.flush()
            if lines:
                yield Batch(lines, first, end_offset=cutter.offset)

    async def _sleep(self, seconds: float) -> bool:
        """Sleep, or wake early on close(); True if closed."""
        return await _closed_within(self._closed, seconds)


async def _closed_within(closed: asyncio.Event, seconds: float) -> bool:
    """Sleep `seconds`, or wake early when `closed` is set; True if it was."""
    try:
        await asyncio.wait_for(closed.wait(), seconds)
    except asyncio.TimeoutError:
        return False
    return True


def _finite(stamp: float) -> float | None:
    """A record's time as the pacer takes it: None for one not known (not finite)."""
    return stamp if math.isfinite(stamp) else None


class _Pacer:
    """Maps log time stamps to wall time at a given speed."""

    def __init__(self, speed: float | None) -> None:
        self.speed = speed  # None or 0: as fast as it is read
        self.t0: float | None = None
        self.w0 = 0.0
        self.loop = asyncio.get_running_loop()

    def wait_for(self, stamp: float | None) -> float:
        if stamp is None or not self.speed:
            return 0.0
        if self.t0 is None:
            self.t0, self.w0 = stamp, self.loop.time()
            return 0.0
        return self.w0 + (stamp - self.t0) / self.speed - self.loop.time()


class ForeignReplay:
    """A finished foreign run replayed as if it were being written (`replay`).

    Its records come in step order, as fast as possible or at `speed` times its own time stamps,
    then an "end of replay" note."""

    BATCH = 256

    def __init__(self, folder: str | Path, spec: SourceSpec, speed: float | None = None) -> None:
        if speed is not None and not speed > 0:
            raise InputError(f"--speed: expected a positive number, got {speed}")
        self.folder, self.spec, self.speed = Path(folder), spec, speed
        self.label = f"replay {self.folder} ({spec.kind})"
        self.notices: list[str] = []
        self.odd = NO_ODD  # the eval values not numbers: no note, probe values (oddvalues.py)
        self._closed = asyncio.Event()

    async def read_bytes(self, name: str) -> bytes | None:
        try:
            return await asyncio.to_thread(read_whole, self.folder / name)
        except FileNotFoundError:
            return None

    async def close(self) -> None:
        self._closed.set()

    def records(self) -> list[Record]:
        from fontaine_tui.core.log.formats.cold import load_source

        store = load_source(self.folder, self.spec).store
        self.notices, self.odd = list(store.notices), store.odd_values
        out: list[Record] = [store.train_at(i) for i in range(len(store.steps))]
        out += [store.probes[s] for s in store.probe_steps()]
        out += [c.second for c in store.conflicts]  # replayed as read: still conflicting
        # how the run ended, where its source says (an MLflow status, a W&B exit code)
        out += [e for e in store.events if e.event in ("end", "error")]
        # a step's probe after its loss, and the end after both
        out.sort(key=lambda r: (r.step, isinstance(r, Probe) + 2 * isinstance(r, Event)))
        return out

    def _said(self) -> Batch | None:
        """What the decoders said of the run and its values not numbers, before its records."""
        if not self.notices and not self.odd.count:
            return None
        return Batch([], 1, note="; ".join(self.notices), odd=self.odd)

    async def follow(self, name: str = LOG) -> AsyncIterator[Batch]:
        if name != LOG:
            return
        records = await asyncio.to_thread(self.records)
        said = self._said()
        if said is not None:
            yield said
        clock = _Pacer(self.speed)  # its own pace
        start = 0
        for i, rec in enumerate(records):
            if self._closed.is_set():
                return
            wait = clock.wait_for(_finite(rec.time))
            if wait > 0:
                if i > start:
                    yield Batch([], 1, records=tuple(records[start:i]))
                    start = i
                if await _closed_within(self._closed, wait):
                    return
            if i - start >= self.BATCH:
                yield Batch([], 1, records=tuple(records[start:i]))
                start = i
                await asyncio.sleep(0)
        if start < len(records):
            yield Batch([], 1, records=tuple(records[start:]))
        yield Batch([], 1, note=f"end of replay ({self.folder.name}, {self.spec.kind})")
