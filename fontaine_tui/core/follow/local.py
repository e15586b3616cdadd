"""Follow a run folder's files as batches of complete lines: local files here.

The SSH follower is in `ssh.py`, the finished-log replay in `replay.py`; all three yield the
same `Batch` and share `LineCutter`. Watch events only wake the reader up (waker.py): every
wake fstat()s and reads to EOF, so a missed or absent event costs latency, never data. One
followed file, and how a rotation or truncation is recognized, is localfile.py's `LocalFile`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import (
    CHUNK,
    MIN_GAP,
    THREAD_READ,
    Batch,
    Chunk,
    finish,
)
from fontaine_tui.core.follow.localfile import LocalFile, continuation, open_file
from fontaine_tui.core.follow.waker import Waker
from fontaine_tui.core.log.lines import LINE_CAP, LineCutter
from fontaine_tui.core.readfile import open_fd, read_whole
from fontaine_tui.core.runfolder import LOG


def _listed(folder: Path, match: Callable[[str], bool]) -> list[str]:
    """The folder's names `match` keeps, in name order (none while it cannot be listed)."""
    try:
        return sorted(n for n in os.listdir(folder) if match(n))
    except OSError:
        return []


def _rewritten(had: tuple[int, tuple[int, int], int], st: os.stat_result) -> bool:
    """Whether a file was truncated or replaced since `had` (bytes read, (dev, ino), mtime).

    A file rewritten in place to the same size shows in its mtime."""
    pos, ident, mtime = had
    return (
        ident != (st.st_dev, st.st_ino)
        or st.st_size < pos
        or (st.st_size == pos and st.st_mtime_ns != mtime)
    )


@dataclass
class _Said:
    """What a local follow said of its file's name: each said once, until it changes."""

    note: str = ""  # to go with the next lines read
    waiting: bool = False  # the file is not there (or not readable) yet
    gone: bool = False  # the file was removed
    renamed: bool = False  # renamed, its successor still empty
    again: bool = False  # the pass found the file changed: the next one at once


class LocalRun:
    """A run folder on this machine. poll_s=None: 0.25 s with inotify, 0.04 s without.

    Following the run's log, its rotated segments (train_log.jsonl.2.gz, .1) are read first.
    A rotation while following loses nothing: a log renamed away is read to its end before the
    file that took its name (a new segment; nothing read before is dropped); a log truncated
    by a copy-truncate rotation is finished from the copy, then followed on from its start.
    """

    def __init__(
        self,
        folder: str | Path,
        poll_s: float | None = None,
        line_cap: int = LINE_CAP,
        inotify: bool = True,
        chunk: int = CHUNK,
        min_gap_s: float = MIN_GAP,
    ) -> None:
        self.folder = Path(folder)
        self.min_gap_s = min_gap_s
        self.label = f"local {self.folder}"
        self.poll_s, self.line_cap, self.inotify, self.chunk = poll_s, line_cap, inotify, chunk
        self.skipped_lines: dict[str, list[int]] = {}
        self.segments = 0  # files begun after the first: rotations seen, history read
        self._closed = asyncio.Event()
        self._wakers: set[Waker] = set()

    async def read_bytes(self, name: str) -> bytes | None:
        try:
            return await asyncio.to_thread(read_whole, self.folder / name)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise InputError(f"{self.folder / name}: cannot read ({exc.strerror})") from None

    async def close(self) -> None:
        self._closed.set()
        for waker in list(self._wakers):
            waker.wake()

    async def follow_files(
        self, match: Callable[[str], bool], under: str = ""
    ) -> AsyncIterator[Chunk]:
        """The bytes of every matching file in the folder as they are written, without end.

        The files are those in the folder (or its subfolder `under`) whose name `match`es,
        in name order each round. A file that was truncated below what was read, or replaced
        by another file, starts again from its first byte (`restart`). This is for formats
        that are not lines (event files) and files that are rewritten whole
        (trainer_state.json): the bytes only, no format."""
        folder = self.folder / under if under else self.folder
        waker = Waker(folder, "", self.poll_s, self.inotify)  # any name in the folder
        self._wakers.add(waker)
        # name -> (bytes read, (dev, ino), mtime): a file rewritten in place to the same size
        # shows in its mtime
        seen: dict[str, tuple[int, tuple[int, int], int]] = {}
        last = 0.0
        try:
            while not self._closed.is_set():
                fresh = False
                for name in _listed(folder, match):
                    try:
                        fd = open_fd(folder / name)
                    except (OSError, InputError):  # gone, or a pipe or device: not read
                        continue
                    try:
                        for chunk in self._file_news(fd, name, seen):
                            fresh = fresh or chunk.at_end
                            yield chunk
                    finally:
                        os.close(fd)
                if not fresh:
                    yield Chunk("", b"", 0, idle=True)
                await waker.wait()
                last = await self._paced(last)
        finally:
            waker.close()
            self._wakers.discard(waker)

    def _file_news(
        self, fd: int, name: str, seen: dict[str, tuple[int, tuple[int, int], int]]
    ) -> Iterator[Chunk]:
        """An open file's bytes past what was read, and its end when anything changed.

        A file truncated or replaced since is read from its first byte (`restart`)."""
        st = os.fstat(fd)
        ident = (st.st_dev, st.st_ino)
        pos, restart = 0, False
        if name in seen:
            pos = seen[name][0]
            restart = _rewritten(seen[name], st)
        if restart:
            pos = 0
        start = pos
        while data := os.pread(fd, self.chunk, pos):
            yield Chunk(name, data, pos, restart)
            restart = False
            pos += len(data)
        if pos != start or restart or name not in seen:
            yield Chunk(name, b"", pos, restart, at_end=True)
        seen[name] = (pos, ident, os.fstat(fd).st_mtime_ns)

    async def _paced(self, last: float) -> float:
        """Wait out min_gap_s since the `last` read; returns the time of this one.

        One wake-up per line is most of the CPU at 100 lines/s: a slow run still gets each
        line at once, a fast one in batches a few lines long."""
        loop = asyncio.get_running_loop()
        rest = last + self.min_gap_s - loop.time()
        if rest > 0 and not self._closed.is_set():
            await asyncio.sleep(rest)
        return loop.time()

    async def _read(self, f: LocalFile) -> bytes:
        size = min(self.chunk, os.fstat(f.fd).st_size - f.pos)
        if size <= 0:
            return b""
        if size > THREAD_READ:
            return await asyncio.to_thread(f.read, size)
        return f.read(size)

    def _segment(self, name: str, note: str) -> Batch:
        self.segments += 1
        return Batch([], 1, True, note, 0, name)

    async def _history(self, path: Path, name: str) -> AsyncIterator[Batch]:
        """The log's rotated segments, oldest first, each a segment ending at its last byte.

        After them, the mark that the log itself is read next."""
        from fontaine_tui.core.log.read import segment_chunks
        from fontaine_tui.core.runfolder import rotated_segments

        had = self.segments
        for seg in rotated_segments(path):
            yield self._segment(seg.name, f"reading rotated segment {seg.name}")
            cutter = LineCutter(self.line_cap)
            chunks = segment_chunks(seg, self.chunk)
            try:
                while data := await asyncio.to_thread(next, chunks, b""):
                    lines, first, _ = cutter.feed(data)
                    if lines:
                        yield Batch(lines, first, end_offset=cutter.offset)
            except (OSError, InputError) as exc:
                yield Batch([], cutter.next_line, note=f"{seg.name}: {exc}")
            for batch in finish(cutter):
                yield batch
        if self.segments > had:
            yield self._segment(name, f"reading {name}")

    async def _drain(self, f: LocalFile, name: str, note: str = "") -> AsyncIterator[Batch]:
        """Read the open file to its end now; `note` rides on the first batch."""
        while not self._closed.is_set():
            data = await self._read(f)
            if not data:
                break
            lines, first, long = f.cutter.feed(data)
            if long:
                self.skipped_lines.setdefault(name, []).extend(long)
                note = "; ".join(filter(None, (note, f.cutter.skip_note(long))))
            if lines or note:
                yield Batch(lines, first, note=note, end_offset=f.cutter.offset)
                note = ""
            if len(data) < self.chunk:
                break
        if note:
            yield Batch([], f.cutter.next_line, note=note, end_offset=f.cutter.offset)

    async def _truncated(self, f: LocalFile, name: str) -> AsyncIterator[Batch]:
        """The open file now holds less, or other first bytes, than what was read."""
        if await asyncio.to_thread(f.starts_with_what_was_read):  # only the torn tail changed
            f.resume_at_offset()
            return
        copy = await asyncio.to_thread(
            continuation, f.path, f.cutter.offset, f.cutter.digest(), f.sibling
        )
        if copy is not None:  # copy-truncate: the rest of what we had not read is in the copy
            from fontaine_tui.core.log.read import segment_chunks

            chunks = segment_chunks(copy, self.chunk)
            skip = f.pos
            note = f"{name} truncated (copy-truncate rotation): the rest read from {copy.name}"
            while data := await asyncio.to_thread(next, chunks, b""):
                if skip >= len(data):
                    skip -= len(data)
                    continue
                lines, first, _ = f.cutter.feed(data[skip:])
                skip = 0
                if lines or note:
                    yield Batch(lines, first, note=note, end_offset=f.cutter.offset)
                    note = ""
        else:
            note = f"{name} truncated: following its new content; nothing read before is dropped"
            yield Batch([], f.cutter.next_line, note=note, end_offset=f.cutter.offset)
        f.cutter.rebase()
        f.pos, f.head, f.seen = 0, b"", None
        f.note_sibling()

    async def follow(self, name: str = LOG, history: bool | None = None) -> AsyncIterator[Batch]:
        """Complete lines of `name` as they are written, without end, until close().

        With `history` (default: for the run's log), its rotated segments come first."""
        path = self.folder / name
        waker = Waker(self.folder, name, self.poll_s, self.inotify)
        self._wakers.add(waker)
        f = LocalFile(path, self.line_cap)
        f.note_sibling()  # name.1 as it is now: read as history, or older than this follow
        said = _Said()
        last_read = 0.0
        try:
            if history if history is not None else name == LOG:
                async for batch in self._history(path, name):
                    yield batch
            while not self._closed.is_set():
                if f.fd < 0:
                    async for batch in self._open(f, name, waker, said):
                        yield batch
                    if f.fd < 0:
                        await waker.wait()
                        continue
                async for batch in self._read_on(f, name, waker, said):
                    yield batch
                if said.again:
                    continue
                await waker.wait()
                last_read = await self._paced(last_read)
        finally:
            f.close()
            waker.close()
            self._wakers.discard(waker)

    async def _open(
        self, f: LocalFile, name: str, waker: Waker, said: _Said
    ) -> AsyncIterator[Batch]:
        """Open the file if it is there; if not (or not readable for now), say so once."""
        try:
            opened = open_file(f.path)
        except OSError as exc:  # unreadable for now: say so, keep trying
            opened, why = None, f"{name}: cannot read ({exc.strerror}); retrying"
        else:
            why = f"waiting for {name}"
        if opened is None:
            if not said.waiting:
                said.waiting = True
                yield Batch([], 1, note=why)
            return
        f.fd, f.ident = opened
        waker.track(f.path)
        if said.waiting:
            said.note = said.note or f"{name} appeared"
        said.waiting = said.gone = False

    async def _read_on(
        self, f: LocalFile, name: str, waker: Waker, said: _Said
    ) -> AsyncIterator[Batch]:
        """One pass over the open file: what is new in it, then whether its name moved.

        A file rewritten under the read, or another file that took the name, asks for the
        next pass at once (`said.again`)."""
        said.again = False
        if f.truncated():
            async for batch in self._truncated(f, name):
                yield batch
        before = f.pos
        async for batch in self._drain(f, name, said.note):
            yield batch
        said.note = ""
        if f.pos != before and f.head_changed():  # rewritten under us while we read
            async for batch in self._truncated(f, name):
                yield batch
            said.again = True
            return
        async for batch in self._name_moved(f, name, waker, said):
            yield batch

    async def _name_moved(
        self, f: LocalFile, name: str, waker: Waker, said: _Said
    ) -> AsyncIterator[Batch]:
        """What the file's name holds now: the file removed, renamed, or another file."""
        try:
            st = os.stat(f.path)
        except FileNotFoundError:
            if not said.gone:
                said.gone = True
                yield self._mark(f, f"{name} removed; waiting for it to reappear")
            return
        if (st.st_dev, st.st_ino) == f.ident:
            return
        if st.st_size == 0:  # renamed, its successor still empty: the writer may still be
            if not said.renamed:  # writing to the old file
                said.renamed = True
                yield self._mark(
                    f, f"{name} was renamed; reading the old file until the new one has data"
                )
            return
        async for batch in self._switch(f, name):
            yield batch
        waker.track(f.path)
        said.renamed = False
        said.again = True

    @staticmethod
    def _mark(f: LocalFile, note: str) -> Batch:
        """A note at where the file's read stands."""
        return Batch([], f.cutter.next_line, note=note, end_offset=f.cutter.offset)

    async def _switch(self, f: LocalFile, name: str) -> AsyncIterator[Batch]:
        """Follow the new file that has the log's name.

        The old one is finished first. The new one is taken as a continuation when it starts
        with what was read, else as a new segment."""
        async for batch in self._drain(f, name):
            yield batch
        old = f.fd
        try:
            opened = open_file(f.path)
        except OSError:
            opened = None
        if opened is None:  # gone again: keep the old file, look later
            return
        f.fd, f.ident = opened
        f.note_sibling()
        if await asyncio.to_thread(f.starts_with_what_was_read):
            os.close(old)
            f.resume_at_offset()
            yield Batch(
                [],
                f.cutter.next_line,
                note=(f"{name} was replaced by a file with the same content; continuing"),
                end_offset=f.cutter.offset,
            )
            return
        os.close(old)
        for batch in finish(f.cutter):
            yield batch
        f.restart()
        yield self._segment(
            name,
            f"{name} was rotated or replaced: reading the new file "
            "(everything read before is kept)",
        )
