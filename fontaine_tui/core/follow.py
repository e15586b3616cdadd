"""Follow a run folder's files as batches of complete lines: local files here.

The SSH follower is in `follow_ssh.py`, the finished-log replay in `replay.py`; all three
yield the same `Batch` and share `LineCutter`. Watch events only wake the reader up: every
wake fstat()s and reads to EOF, so a missed or absent event costs latency, never data.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import errno
import os
import stat
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.runfolder import LOG

LINE_CAP = 16 << 20        # a longer line is skipped, counted and reported
CHUNK = 4 << 20            # most bytes read per batch (keeps a catch-up read responsive)
HEAD = 4096                # fingerprint length: truncate-and-refill past the old size shows here
THREAD_READ = 1 << 20      # reads expected to be larger than this go to a worker thread
POLL_WATCHED = 0.25        # re-check this often even with inotify (writes from other hosts)
MIN_GAP = 0.02             # reads at most this often: a fast writer's lines come in batches
POLL_ONLY = 0.04           # without inotify: ~0.35 % of a core per followed file, p95 < 50 ms


@dataclass(frozen=True, slots=True)
class Batch:
    lines: list[bytes]      # complete lines, newline stripped (a CR may remain)
    first_line: int         # 1-based line number of lines[0] in the current file
    reset: bool = False     # the file was truncated/replaced: discard everything read before
    note: str = ""          # a status change to show the user
    end_offset: int = 0     # byte offset just past the last complete line


@runtime_checkable
class RunSource(Protocol):
    label: str

    def follow(self, name: str = LOG) -> AsyncIterator[Batch]: ...

    async def read_bytes(self, name: str) -> bytes | None: ...

    async def close(self) -> None: ...


def mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


class LineCutter:
    """Bytes in, complete lines out, with line numbers, byte offsets and a length cap.

    An over-long line is dropped as it streams (never held whole) and stands in the output as
    an empty line, so later line numbers stay right; consumers skip blank lines.
    """

    def __init__(self, cap: int = LINE_CAP, first_line: int = 1, offset: int = 0) -> None:
        self.cap = cap
        self.next_line = first_line
        self.offset = offset          # byte offset just past the last complete line
        self.tail = b""
        self.skip_bytes = -1          # >= 0 while dropping an over-long line
        self.skipped: list[int] = []  # line numbers of over-long lines

    def feed(self, data: bytes) -> tuple[list[bytes], int, list[int]]:
        """Returns (lines, number of the first, line numbers skipped in this feed)."""
        first = self.next_line
        out: list[bytes] = []
        skipped: list[int] = []
        if self.skip_bytes >= 0:
            nl = data.find(b"\n")
            if nl < 0:
                self.skip_bytes += len(data)
                return out, first, skipped
            out.append(b"")
            self.next_line += 1
            self.offset += self.skip_bytes + nl + 1
            self.skip_bytes = -1
            data = data[nl + 1 :]
        buf = self.tail + data if self.tail else data
        end = buf.rfind(b"\n")
        if end < 0:
            self.tail = buf
        else:
            lines = buf[:end].split(b"\n")
            self.tail = buf[end + 1 :]
            self.offset += end + 1
            if end > self.cap:
                for i, line in enumerate(lines):
                    if len(line) > self.cap:
                        lines[i] = b""
                        skipped.append(self.next_line + i)
            out += lines
            self.next_line += len(lines)
        if len(self.tail) > self.cap:
            skipped.append(self.next_line)
            self.skip_bytes = len(self.tail)
            self.tail = b""
        self.skipped += skipped
        return out, first, skipped

    def skip_note(self, skipped: list[int]) -> str:
        if not skipped:
            return ""
        where = ", ".join(map(str, skipped[:5])) + (", ..." if len(skipped) > 5 else "")
        return f"skipped over-long line(s) {where} (longer than {mib(self.cap)})"


# -- wake-ups -----------------------------------------------------------------------------

# The folder watch sees names come and go; the file watch sees writes to the one open file.
# (A folder watch that also took IN_MODIFY would wake every follower of the folder on every
# write to any file in it.)
_IN_DIR = 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800  # moved from/to, create, delete, *_self
_IN_FILE = 0x2 | 0x4 | 0x8  # modify, attrib (truncate via chmod-less tools), close_write
_IN_SELF = 0x400 | 0x800  # the folder itself was deleted or moved
_IN_OVERFLOW = 0x4000
_EVENT = struct.Struct("iIII")


def _libc() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        lib.inotify_init1  # noqa: B018 - probe for the symbol
    except (OSError, AttributeError):
        return None
    return lib


_LIBC = _libc()


class Waker:
    """Sleep until the watched folder says `name` changed, or `poll_s` passes (polling fallback)."""

    def __init__(self, folder: Path, name: str, poll_s: float | None, inotify: bool = True
                 ) -> None:
        self.folder, self.name, self.poll_s = folder, os.fsencode(name), poll_s
        self._event = asyncio.Event()
        self._fd = -1
        self._dir_wd = self._file_wd = -1
        self._use = inotify and _LIBC is not None
        self._loop = asyncio.get_running_loop()

    @property
    def watching(self) -> bool:
        return self._fd >= 0

    def _watch(self) -> None:
        if not self._use or self._fd >= 0:
            return
        fd = _LIBC.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            self._use = False
            return
        wd = _LIBC.inotify_add_watch(fd, os.fsencode(self.folder), _IN_DIR)
        if wd < 0:
            os.close(fd)  # the folder may not exist yet: retry on the next wait
            return
        self._fd, self._dir_wd, self._file_wd = fd, wd, -1

    def track(self, path: Path) -> None:
        """Watch writes to the file now at `path` (call after each open)."""
        self._watch()
        if self._fd < 0:
            return
        if self._file_wd >= 0:
            _LIBC.inotify_rm_watch(self._fd, self._file_wd)
        self._file_wd = _LIBC.inotify_add_watch(self._fd, os.fsencode(path), _IN_FILE)

    def _unwatch(self) -> None:
        if self._fd >= 0:
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1

    def _on_events(self) -> None:
        try:
            data = os.read(self._fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            self._unwatch()
            self._event.set()
            return
        pos = 0
        while pos + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, pos)
            name = data[pos + _EVENT.size : pos + _EVENT.size + length].rstrip(b"\0")
            pos += _EVENT.size + length
            if wd == self._dir_wd and mask & _IN_SELF:
                self._unwatch()  # the folder went away: poll until it is back
                self._event.set()
                return
            if wd == self._file_wd or name == self.name or mask & _IN_OVERFLOW:
                self._event.set()

    async def wait(self) -> None:
        # The kernel queues events while we are not listening (between two waits), so the
        # fd is read only here: a fast writer costs one wake-up per wait, not one per write.
        self._watch()
        fd = self._fd
        if fd >= 0:
            self._loop.add_reader(fd, self._on_events)
        if not self._event.is_set():
            timeout = self.poll_s or (POLL_WATCHED if self.watching else POLL_ONLY)
            timer = self._loop.call_later(timeout, self._event.set)  # lighter than wait_for
            try:
                await self._event.wait()
            finally:
                timer.cancel()
        if fd >= 0 and fd == self._fd:
            self._loop.remove_reader(fd)
        self._event.clear()

    def close(self) -> None:
        self._unwatch()


# -- local follower -----------------------------------------------------------------------


def _open(path: Path) -> tuple[int, tuple[int, int]] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise IsADirectoryError(errno.EISDIR, "not a regular file")
    return fd, (st.st_dev, st.st_ino)


class _LocalFile:
    """One followed file: the open fd, where we are in it, and its first bytes."""

    def __init__(self, path: Path, cap: int) -> None:
        self.path, self.cap = path, cap
        self.fd = -1
        self.ident: tuple[int, int] | None = None
        self.pos = 0
        self.head = b""
        self.cutter = LineCutter(cap)
        self.seen: tuple[int, int] | None = None  # (size, mtime_ns) at the last check

    def restart(self) -> None:
        self.pos, self.head, self.cutter, self.seen = 0, b"", LineCutter(self.cap), None

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def head_changed(self) -> bool:
        return bool(self.head) and os.pread(self.fd, len(self.head), 0) != self.head

    def truncated(self) -> bool:
        st = os.fstat(self.fd)
        seen, self.seen = self.seen, (st.st_size, st.st_mtime_ns)
        if seen == self.seen:  # untouched since the last look: skip the head read
            return False
        return st.st_size < self.pos or self.head_changed()

    def read(self, size: int) -> bytes:
        data = os.pread(self.fd, size, self.pos)
        if self.pos < HEAD and data:
            self.head += data[: HEAD - self.pos]
        self.pos += len(data)
        return data


class LocalRun:
    """A run folder on this machine. poll_s=None: 0.25 s with inotify, 0.04 s without."""

    def __init__(self, folder: str | Path, poll_s: float | None = None, line_cap: int = LINE_CAP,
                 inotify: bool = True, chunk: int = CHUNK, min_gap_s: float = MIN_GAP
                 ) -> None:
        self.folder = Path(folder)
        self.min_gap_s = min_gap_s
        self.label = f"local {self.folder}"
        self.poll_s, self.line_cap, self.inotify, self.chunk = poll_s, line_cap, inotify, chunk
        self.skipped_lines: dict[str, list[int]] = {}
        self.resets = 0
        self._closed = asyncio.Event()
        self._wakers: set[Waker] = set()

    async def read_bytes(self, name: str) -> bytes | None:
        try:
            return await asyncio.to_thread((self.folder / name).read_bytes)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise InputError(f"{self.folder / name}: cannot read ({exc.strerror})") from None

    async def close(self) -> None:
        self._closed.set()
        for waker in list(self._wakers):
            waker._event.set()

    async def _read(self, f: _LocalFile) -> bytes:
        size = min(self.chunk, os.fstat(f.fd).st_size - f.pos)
        if size <= 0:
            return b""
        if size > THREAD_READ:
            return await asyncio.to_thread(f.read, size)
        return f.read(size)

    async def follow(self, name: str = LOG) -> AsyncIterator[Batch]:
        """Endless: complete lines of `name` as they are written, until close()."""
        path = self.folder / name
        waker = Waker(self.folder, name, self.poll_s, self.inotify)
        self._wakers.add(waker)
        f = _LocalFile(path, self.line_cap)
        skipped = self.skipped_lines.setdefault(name, [])
        note, reset, said_waiting, said_gone = "", False, False, False
        loop, last_read = asyncio.get_running_loop(), 0.0
        try:
            while not self._closed.is_set():
                if f.fd < 0:
                    try:
                        opened = _open(path)
                    except OSError as exc:  # unreadable for now: say so, keep trying
                        opened, why = None, f"{name}: cannot read ({exc.strerror}); retrying"
                    else:
                        why = f"waiting for {name}"
                    if opened is None:
                        if not said_waiting:
                            said_waiting = True
                            yield Batch([], 1, note=why)
                        await waker.wait()
                        continue
                    f.fd, f.ident = opened
                    waker.track(path)
                    if said_waiting:
                        note = note or f"{name} appeared"
                    said_waiting = said_gone = False
                if f.truncated():
                    f.restart()
                    reset, note = True, f"{name} truncated; reading from the start"
                while not self._closed.is_set():
                    data = await self._read(f)
                    if not data:
                        break
                    if f.head_changed():  # rewritten under us while we read: start over
                        f.restart()
                        reset, note = True, f"{name} truncated; reading from the start"
                        continue
                    lines, first, long = f.cutter.feed(data)
                    if long:
                        skipped += long
                        note = "; ".join(filter(None, (note, f.cutter.skip_note(long))))
                    if lines or note or reset:
                        yield self._batch(f, lines, first, reset, note)
                        reset, note = False, ""
                    if len(data) < self.chunk:
                        break
                try:
                    st = os.stat(path)
                except FileNotFoundError:
                    st = None
                    if not said_gone:
                        said_gone = True
                        note = f"{name} removed; waiting for it to reappear"
                if st is not None and (st.st_dev, st.st_ino) != f.ident:
                    # replaced or rotated: the old file was read to EOF above, now switch
                    f.close()
                    f.restart()
                    reset, note = True, f"{name} replaced; reading from the start"
                    continue
                if reset or note:
                    yield self._batch(f, [], f.cutter.next_line, reset, note)
                    reset, note = False, ""
                await waker.wait()
                # one wake-up per line is most of the CPU at 100 lines/s; a slow run still
                # gets each line at once, a fast one in batches a few lines long
                rest = last_read + self.min_gap_s - loop.time()
                if rest > 0 and not self._closed.is_set():
                    await asyncio.sleep(rest)
                last_read = loop.time()
        finally:
            f.close()
            waker.close()
            self._wakers.discard(waker)

    def _batch(self, f: _LocalFile, lines: list[bytes], first: int, reset: bool,
               note: str) -> Batch:
        if reset:
            self.resets += 1
        return Batch(lines, first, reset, note, f.cutter.offset)


def open_source(target: str, ssh_options: tuple[str, ...] = ()) -> RunSource:
    """A source from a CLI target string; raises InputError with one clear line."""
    from fontaine_tui.core.target import LocalTarget, parse_target

    parsed = parse_target(target)
    if isinstance(parsed, LocalTarget):
        folder = parsed.folder
        if folder.is_file() and folder.name == LOG:
            folder = folder.parent
        if not folder.is_dir():
            raise InputError(f"{parsed.folder}: no such run folder")
        return LocalRun(folder)
    from fontaine_tui.core.follow_ssh import SshRun

    return SshRun(parsed, ssh_options=ssh_options)
