"""Bytes in, complete lines out: the one line cutter every reader of a log uses.

Its users are the cold reader in `read.py`, the followers in `core/follow/` and the ledger's step
scan.

A torn last line waits for its newline; a file whose first line ends in a bare CR is read with
CR as the line end; an over-long line is dropped as it streams and counted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from fontaine_tui.core.text import mib

LINE_CAP = 16 << 20  # a longer line is skipped, counted and reported
ANCHOR = 4096  # the last bytes read, checked again before anything after them is sent
CR_NOTE = "its lines end in a bare CR (no newline): read with CR as the line end"


def cr_only(buf: bytes) -> bool | None:
    """Whether this file ends its lines in a bare CR (old Mac style).

    It is decided by its first line end: True for a CR not followed by LF, False for LF or CRLF,
    None while there is none (or the buffer ends in a CR whose LF may follow)."""
    cr, lf = buf.find(b"\r"), buf.find(b"\n")
    if cr < 0 or (0 <= lf < cr):
        return False if lf >= 0 else None
    if cr + 1 >= len(buf):
        return None
    return buf[cr + 1] != 0x0A


def to_lf(cr: bool | None, pending: bytes, data: bytes) -> tuple[bool | None, bytes]:
    """The bare-CR rule for a stream read in pieces.

    The rule is decided from `pending + data` once a line end shows. CR line ends are then given
    as LF, at the same length so offsets stay right. Returns the decision so far and the data to
    split on LF."""
    if cr is None and data:
        cr = cr_only(pending + data)
    return cr, data.replace(b"\r", b"\n") if cr else data


class LineCutter:
    """Bytes in, complete lines out, with line numbers, byte offsets and a length cap.

    An over-long line is dropped as it streams (never held whole) and stands in the output as
    an empty line, so later line numbers stay right; consumers skip blank lines. With `track`
    (the followers) the cutter keeps the sha256 of the file's bytes before `offset` and its
    last bytes (`anchor`), so a file that took the log's place can be distinguished from one that
    starts with exactly what was read; the cold reader, which reads a file once, goes without.
    """

    def __init__(
        self, cap: int = LINE_CAP, first_line: int = 1, offset: int = 0, track: bool = True
    ) -> None:
        self.cap = cap
        self.track = track
        self.next_line = first_line
        self.offset = offset  # byte offset just past the last complete line
        self.tail = b""
        self.skip_bytes = -1  # >= 0 while dropping an over-long line
        self.skipped: list[int] = []  # line numbers of over-long lines
        self._hash = hashlib.sha256()
        self._skip_hash = self._hash
        self._foreign = 0  # leading bytes of `tail` from the previous file
        self._recent = b""  # the last ANCHOR bytes consumed (now before `offset`)
        self._skip_recent = b""  # the same while dropping an over-long line
        self.cr: bool | None = None  # lines end in a bare CR (cr_only)

    def digest(self) -> str:
        return self._hash.hexdigest()

    def anchor(self) -> bytes:
        """The file's last bytes before `offset` (at most ANCHOR, none from a previous file).

        A follower checks that the file still holds them before trusting what comes after."""
        n = min(ANCHOR, self.offset, len(self._recent))
        return self._recent[len(self._recent) - n :] if n > 0 else b""

    def resume(self) -> LineCutter:
        """A cutter at the same line and offset, its torn tail dropped (it is read again)."""
        other = LineCutter(self.cap, self.next_line, self.offset, self.track)
        other._hash = self._hash.copy()
        other._recent = self._recent
        other.skipped = self.skipped
        other.cr = self.cr
        return other

    def copy(self) -> LineCutter:
        """A cutter in the same state, torn tail included, that goes on on its own."""
        other = LineCutter(self.cap, self.next_line, self.offset, self.track)
        other.tail, other.skip_bytes, other.skipped = self.tail, self.skip_bytes, [*self.skipped]
        other._hash, other._recent = self._hash.copy(), self._recent
        other._skip_hash = other._hash if self._skip_hash is self._hash else self._skip_hash.copy()
        other._skip_recent, other._foreign, other.cr = self._skip_recent, self._foreign, self.cr
        return other

    def rebase(self) -> None:
        """Go on in a new file, after a copy-truncate rotation.

        The line count and the torn tail are kept. Offsets and the digest count from the new
        file's first byte."""
        if self.skip_bytes >= 0:
            self.offset, self._skip_hash = -self.skip_bytes, hashlib.sha256()
        else:
            self.offset, self._foreign = -len(self.tail), len(self.tail)
        self._hash = hashlib.sha256()

    @property
    def pending(self) -> bytes:
        """The torn last line read so far."""
        return self.tail

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
        out, first, skipped, _ = self.feed_block(data)
        return out, first, skipped

    def feed_block(self, data: bytes) -> tuple[list[bytes], int, list[int], bytes | memoryview]:
        """`feed`, with the same lines also as one block ending in a newline.

        The block is a view of the bytes, no copy, for a whole-block parse. The block is
        empty when a line was dropped."""
        first = self.next_line
        out: list[bytes] = []
        skipped: list[int] = []
        block: bytes | memoryview = b""
        self.cr, data = to_lf(self.cr, self.tail, data)
        if self.skip_bytes >= 0:
            rest = self._end_skip(data)
            if rest is None:
                return out, first, skipped, block
            out.append(b"")  # the over-long line, its place kept
            data = rest
        buf = self.tail + data if self.tail else data
        end = buf.rfind(b"\n")
        if end < 0:
            self.tail = buf
        else:
            lines = self._whole_lines(buf, end, skipped)
            if not skipped and not out:
                block = memoryview(buf)[: end + 1]
            out += lines
            self.next_line += len(lines)
        if len(self.tail) > self.cap:
            self._start_skip(skipped)
        self.skipped += skipped
        return out, first, skipped, block

    def _end_skip(self, data: bytes) -> bytes | None:
        """Pass over the rest of an over-long line; the bytes after it, or None: not ended yet.

        Where `data` holds its end, the line counts as read."""
        nl = data.find(b"\n")
        if nl < 0:
            self.skip_bytes += len(data)
            if self.track:
                self._skip_hash.update(data)
                self._skip_recent = _last(self._skip_recent, data)
            return None
        if self.track:
            self._skip_hash.update(memoryview(data)[: nl + 1])
            self._hash = self._skip_hash
            self._recent = _last(self._skip_recent, data[: nl + 1])
        self.next_line += 1
        self.offset += self.skip_bytes + nl + 1
        self.skip_bytes = -1
        return data[nl + 1 :]

    def _whole_lines(self, buf: bytes, end: int, skipped: list[int]) -> list[bytes]:
        """The whole lines of `buf` (up to its last newline, at `end`); the rest is the tail.

        A line longer than the cap is blanked, its number added to `skipped`."""
        if self.track:
            self._hash.update(memoryview(buf)[self._foreign : end + 1])
            self._recent = _last(self._recent, memoryview(buf)[: end + 1])
        self._foreign = 0
        lines = buf.split(b"\n")
        self.tail = lines.pop()
        self.offset += end + 1
        if end > self.cap:
            for i, line in enumerate(lines):
                if len(line) > self.cap:
                    lines[i] = b""
                    skipped.append(self.next_line + i)
        return lines

    def _start_skip(self, skipped: list[int]) -> None:
        """Begin passing over the torn tail, longer than the cap: the line is skipped."""
        skipped.append(self.next_line)
        self.skip_bytes = len(self.tail)
        if self.track:
            self._skip_hash = self._hash.copy()
            self._skip_hash.update(memoryview(self.tail)[self._foreign :])
            self._skip_recent = _last(self._recent, self.tail)
        self._foreign = 0
        self.tail = b""

    def skip_note(self, skipped: list[int]) -> str:
        if not skipped:
            return ""
        where = ", ".join(map(str, skipped[:5])) + (", ..." if len(skipped) > 5 else "")
        return f"skipped over-long line(s) {where} (longer than {mib(self.cap)})"


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
