"""What every follower shares: the Batch it yields, the RunSource protocol, the line cutter.

The local follower is in `local.py`, the SSH one in `ssh.py`, the finished-log replay in
`replay.py`; all yield the same `Batch` and cut lines with `LineCutter`.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from fontaine_tui.core.log.records import to_lf
from fontaine_tui.core.runfolder import LOG

LINE_CAP = 16 << 20        # a longer line is skipped, counted and reported
CHUNK = 4 << 20            # most bytes read per batch (keeps a catch-up read responsive)
HEAD = 4096                # fingerprint length: truncate-and-refill past the old size shows here
ANCHOR = 4096              # the last bytes read, checked again before anything after them is sent
THREAD_READ = 1 << 20      # reads expected to be larger than this go to a worker thread
POLL_WATCHED = 0.25        # re-check this often even with inotify (writes from other hosts)
MIN_GAP = 0.02             # reads at most this often: a fast writer's lines come in batches
POLL_ONLY = 0.04           # without inotify: ~0.35 % of a core per followed file, p95 < 50 ms


@dataclass(frozen=True, slots=True)
class Batch:
    lines: list[bytes]      # complete lines, newline stripped (a CR may remain)
    first_line: int         # 1-based line number of lines[0] in the current segment
    segment: bool = False   # these lines start another file (`name`): a rotated segment read
                            # first, or the file that took the log's name after a rotation or
                            # replacement. Keep everything read before; numbers restart at 1.
    note: str = ""          # a status change to show the user
    end_offset: int = 0     # byte offset just past the last complete line
    name: str = ""          # with `segment`: the file the lines now come from


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
    an empty line, so later line numbers stay right; consumers skip blank lines. The cutter
    keeps the sha256 of the file's bytes before `offset`, so a file that took the log's place
    can be told apart from one that starts with exactly what was read.
    """

    def __init__(self, cap: int = LINE_CAP, first_line: int = 1, offset: int = 0) -> None:
        self.cap = cap
        self.next_line = first_line
        self.offset = offset          # byte offset just past the last complete line
        self.tail = b""
        self.skip_bytes = -1          # >= 0 while dropping an over-long line
        self.skipped: list[int] = []  # line numbers of over-long lines
        self._hash = hashlib.sha256()
        self._skip_hash = self._hash
        self._foreign = 0             # leading bytes of `tail` from the previous file
        self._recent = b""            # the last ANCHOR bytes consumed (now before `offset`)
        self._skip_recent = b""       # the same while dropping an over-long line
        self.cr: bool | None = None   # lines end in a bare CR (store.cr_only)

    def digest(self) -> str:
        return self._hash.hexdigest()

    def anchor(self) -> bytes:
        """The file's last bytes before `offset` (at most ANCHOR, none from a previous file):
        a follower checks that the file still holds them before trusting what comes after."""
        n = min(ANCHOR, self.offset, len(self._recent))
        return self._recent[len(self._recent) - n :] if n > 0 else b""

    def resume(self) -> LineCutter:
        """A cutter at the same line and offset, its torn tail dropped (it is read again)."""
        other = LineCutter(self.cap, self.next_line, self.offset)
        other._hash = self._hash.copy()
        other._recent = self._recent
        other.skipped = self.skipped
        other.cr = self.cr
        return other

    def rebase(self) -> None:
        """The stream goes on in a new file (a copy-truncate rotation): keep the line count
        and the torn tail, count offsets and the digest from the new file's first byte."""
        if self.skip_bytes >= 0:
            self.offset, self._skip_hash = -self.skip_bytes, hashlib.sha256()
        else:
            self.offset, self._foreign = -len(self.tail), len(self.tail)
        self._hash = hashlib.sha256()

    def flush(self) -> tuple[list[bytes], int]:
        """The file is finished: its torn last line, if any, as a line of its own."""
        first = self.next_line
        if self.skip_bytes >= 0:
            self.skip_bytes, self.next_line = -1, first + 1
            return [b""], first
        if not self.tail:
            return [], first
        line, self.tail = self.tail, b""
        self.next_line += 1
        return [line], first

    def feed(self, data: bytes) -> tuple[list[bytes], int, list[int]]:
        """Returns (lines, number of the first, line numbers skipped in this feed)."""
        first = self.next_line
        out: list[bytes] = []
        skipped: list[int] = []
        self.cr, data = to_lf(self.cr, self.tail, data)
        if self.skip_bytes >= 0:
            nl = data.find(b"\n")
            if nl < 0:
                self.skip_bytes += len(data)
                self._skip_hash.update(data)
                self._skip_recent = _last(self._skip_recent, data)
                return out, first, skipped
            self._skip_hash.update(memoryview(data)[: nl + 1])
            self._hash = self._skip_hash
            self._recent = _last(self._skip_recent, data[: nl + 1])
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
            self._hash.update(memoryview(buf)[self._foreign : end + 1])
            self._recent = _last(self._recent, memoryview(buf)[: end + 1])
            self._foreign = 0
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
            self._skip_hash = self._hash.copy()
            self._skip_hash.update(memoryview(self.tail)[self._foreign :])
            self._skip_recent = _last(self._recent, self.tail)
            self._foreign = 0
            self.tail = b""
        self.skipped += skipped
        return out, first, skipped

    def skip_note(self, skipped: list[int]) -> str:
        if not skipped:
            return ""
        where = ", ".join(map(str, skipped[:5])) + (", ..." if len(skipped) > 5 else "")
        return f"skipped over-long line(s) {where} (longer than {mib(self.cap)})"


def finish(cutter: LineCutter) -> list[Batch]:
    """The file is done: its torn last line (it will never be finished), if any, as a batch."""
    lines, first = cutter.flush()
    return [Batch(lines, first, end_offset=cutter.offset)] if lines else []


def _last(old: bytes, more: bytes | memoryview) -> bytes:
    """The last ANCHOR bytes of old + more."""
    if len(more) >= ANCHOR:
        return bytes(more[len(more) - ANCHOR :])
    return (old + bytes(more))[-ANCHOR:]


def prefix_digest(chunks: Iterable[bytes], size: int) -> str | None:
    """sha256 of the first `size` bytes of a stream; None when it is shorter."""
    h, left = hashlib.sha256(), size
    for data in chunks:
        if left <= 0:
            break
        piece = memoryview(data)[:left]
        h.update(piece)
        left -= len(piece)
    return h.hexdigest() if left <= 0 else None
