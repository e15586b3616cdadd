"""One followed local file: its open descriptor, how far it was read, its first bytes.

The changes under the follower it distinguishes are the same file grown, a truncated or rewritten
one (`LocalFile.truncated`), a rotated copy that holds what was read and its rest
(`continuation`, after a copy-truncate).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import CHUNK, HEAD
from fontaine_tui.core.log.lines import LineCutter, prefix_digest
from fontaine_tui.core.readfile import open_fd


def open_file(path: Path) -> tuple[int, tuple[int, int]] | None:
    """The file at `path` opened, as (fd, (device, inode)), or None where there is none.

    A pipe, a device or a folder raises IsADirectoryError, a read that failed."""
    try:
        fd = open_fd(path)
    except FileNotFoundError:
        return None
    except InputError:  # a pipe, a device, a folder: reported as a read that failed
        raise IsADirectoryError(errno.EISDIR, "not a regular file") from None
    st = os.fstat(fd)
    return fd, (st.st_dev, st.st_ino)


class LocalFile:
    """One followed file: the open fd, where we are in it, and its first bytes."""

    def __init__(self, path: Path, cap: int) -> None:
        self.path, self.cap = path, cap
        self.fd = -1
        self.ident: tuple[int, int] | None = None
        self.pos = 0
        self.head = b""
        self.cutter = LineCutter(cap)
        self.seen: tuple[int, int] | None = None  # (size, mtime_ns) at the last check
        self.sibling: tuple[int, int] | None = None  # name.1 when the file was opened

    def restart(self) -> None:
        self.pos, self.head, self.cutter, self.seen = 0, b"", LineCutter(self.cap), None

    def note_sibling(self) -> None:
        self.sibling = ident_of(self.path.with_name(self.path.name + ".1"))

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
        if st.st_size < self.pos or self.head_changed():
            return True
        # nothing read yet and empty, but a new name.1 beside it: a copy-truncate came between
        # two reads (or before the first)
        return (
            self.pos == 0
            and st.st_size == 0
            and ident_of(self.path.with_name(self.path.name + ".1")) not in (None, self.sibling)
        )

    def read(self, size: int) -> bytes:
        data = os.pread(self.fd, size, self.pos)
        if self.pos < HEAD and data:
            self.head += data[: HEAD - self.pos]
        self.pos += len(data)
        return data

    def chunks(self, start: int = 0) -> Iterator[bytes]:
        """The open file's bytes from `start`, as it is now."""
        while data := os.pread(self.fd, CHUNK, start):
            start += len(data)
            yield data

    def starts_with_what_was_read(self) -> bool:
        """Do the open file's first bytes hash to what the cutter consumed?"""
        offset = self.cutter.offset
        return offset > 0 and prefix_digest(self.chunks(), offset) == self.cutter.digest()

    def resume_at_offset(self) -> None:
        """Go on from the last complete line (the torn tail is read again)."""
        self.cutter = self.cutter.resume()
        self.pos, self.seen = self.cutter.offset, None
        self.head = os.pread(self.fd, min(HEAD, self.pos), 0)


def ident_of(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`; None where it cannot be examined."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def continuation(path: Path, offset: int, digest: str, old: tuple[int, int] | None) -> Path | None:
    """A rotated copy of the followed file that starts with exactly the bytes read so far.

    Such a copy (`name.1`, `name.1.gz`) is where a copy-truncate rotation put the lines we had
    not read yet. With nothing read (offset 0) every file qualifies, so only one made since we
    opened (not `old`) is taken."""
    from fontaine_tui.core.log.read import segment_chunks

    for name in (f"{path.name}.1", f"{path.name}.1.gz"):
        cand = path.with_name(name)
        if offset == 0 and ident_of(cand) == old:
            continue
        try:
            if cand.is_file() and prefix_digest(segment_chunks(cand), offset) == digest:
                return cand
        except (OSError, InputError):
            continue
    return None
