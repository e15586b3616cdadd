"""Reading a file a run folder (or a user) gave us: a regular file only, and a bounded one.

A FIFO in place of a log would hold a reader forever, /dev/zero would fill the memory, a
file of many gigabytes would be read whole: every whole-file read and every follower's
open goes through `open_regular`, which opens without blocking and refuses what fstat does
not call a regular file, and `read_whole`, which also refuses a file over `limit()` bytes
(checked by its size and by reading at most one byte more). Each refusal is one InputError
line naming the file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from fontaine_tui.core.errors import InputError

LIMIT = 512 * 2**20  # bytes read whole from one file, at most
LIMIT_ENV = "FONTAINE_READ_LIMIT"  # another limit, in bytes


def limit() -> int:
    """The most bytes one whole-file read takes: $FONTAINE_READ_LIMIT, else LIMIT."""
    raw = os.environ.get(LIMIT_ENV, "")
    try:
        value = int(raw) if raw else LIMIT
    except ValueError:
        raise InputError(f"{LIMIT_ENV}: expected a number of bytes, got {raw[:40]!r}") from None
    if value <= 0:
        raise InputError(f"{LIMIT_ENV}: expected a positive number of bytes, got {value}")
    return value


# what a file that is not a regular one is, in the words of each refusal
KINDS = {
    "fifo": "a FIFO (named pipe)",
    "device": "a device",
    "folder": "a folder",
    "socket": "a socket",
    "other": "a special file",
}

# the same kinds told by a remote host's sh (a link followed, as open follows it): `kind NAME`
# prints the key of KINDS for the file at NAME
KIND_SH = r"""
kind() {
  if [ -p "$1" ]; then echo fifo
  elif [ -c "$1" ] || [ -b "$1" ]; then echo device
  elif [ -d "$1" ]; then echo folder
  elif [ -S "$1" ]; then echo socket
  else echo other; fi
}
"""


def special_kind(mode: int) -> str:
    """The key of KINDS for a file of st_mode `mode` that is not a regular one."""
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "other"


def not_regular(path: str | Path, kind: str) -> InputError:
    """The refusal of a file that is not a regular one; `kind` a key of KINDS."""
    return InputError(f"{path}: {not_regular_words(kind)}")


def not_regular_words(kind: str) -> str:
    """`not_regular`'s words after the file's name."""
    return (
        f"not a regular file ({KINDS.get(kind, KINDS['other'])}); refused: reading it "
        "could wait or run forever"
    )


def open_fd(path: str | Path) -> int:
    """A file descriptor open for reading on the regular file at `path` (links followed).

    Raises InputError for a FIFO, a device, a folder or a socket, at once (the open never
    waits for a writer). Raises FileNotFoundError and other OSErrors as open raises them.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise not_regular(path, special_kind(mode))
    return fd


def open_regular(path: str | Path) -> BinaryIO:
    """`open_fd` as a binary file object (for a streaming read)."""
    return os.fdopen(open_fd(path), "rb")


def too_big(path: str | Path, size: int, most: int) -> InputError:
    return InputError(
        f"{path}: {size} bytes or more, over the {most} bytes read whole from "
        f"one file (${LIMIT_ENV} sets another limit); refused"
    )


def _read_upto(fh: BinaryIO, most: int) -> bytes:
    """At most `most` bytes, read a MiB at a time.

    A huge limit allocates no more than the file holds (`fh.read(most)` asks for all of it)."""
    parts, total = [], 0
    while total < most and (data := fh.read(min(2**20, most - total))):
        parts.append(data)
        total += len(data)
    return b"".join(parts)


def read_whole(path: str | Path, most: int | None = None) -> bytes:
    """The bytes of the regular file at `path`, at most `most` of them.

    `most` defaults to `limit()`. Raises InputError naming the file and its size when the
    file holds more.
    """
    most = limit() if most is None else most
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > most:
            raise too_big(path, size, most)
        data = _read_upto(fh, most + 1)
    if len(data) > most:  # it grew since fstat
        raise too_big(path, len(data), most)
    return data


def iter_regular(
    path: str | Path, chunk: int, start: int = 0, stop: int | None = None
) -> Iterator[bytes]:
    """The bytes of the regular file at `path` from `start` to `stop`, `chunk` at a time.

    `stop` defaults to the file's size when opened, so a read always ends.
    """
    with open_regular(path) as fh:
        end = os.fstat(fh.fileno()).st_size if stop is None else stop
        fh.seek(start)
        left = end - start
        while left > 0:
            data = fh.read(min(chunk, left))
            if not data:
                break
            left -= len(data)
            yield data


def read_text(path: str | Path, encoding: str = "utf-8", errors: str = "strict") -> str:
    """`read_whole`, decoded."""
    return read_whole(path).decode(encoding, errors)


def check_file(path: str | Path) -> int:
    """The size of the regular file at `path`, refused as `open_fd` refuses.

    For a reader that opens the file by other means, such as SQLite.
    """
    fd = open_fd(path)
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)
