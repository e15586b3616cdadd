"""Crash-safe file writes: temp file, fsync, rename, fsync the folder.

Every file the program writes in a run folder is opened or replaced here, never through a
symbolic link: a link planted in place of babysit.jsonl, amendments.jsonl, review.jsonl,
attempts.jsonl, verdict.json, engine.out.log (and the rest) would have the write land where
it points, in a file the program did not create. `open_own` opens with O_NOFOLLOW and
refuses anything but a regular file; `atomic_write` and `replace_own` refuse to replace a
link; `create_new` never replaces anything. Each refusal is one InputError line naming the
file.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

OWN_HEAD = 4096  # how much of an existing file replace_own() reads to recognise it


def fsync_dir(folder: str | Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _linked(path: str | Path) -> Exception:
    from fontaine_tui.core.errors import InputError

    return InputError(
        f"{path}: a symbolic link; refused: fontaine-tui writes its own files, never "
        "through a link (move the link away)"
    )


def open_own(path: str | Path, flags: int, mode: int = 0o644) -> int:
    """`os.open(path, flags, mode)` of a file this program writes, never through a link.

    Raises InputError for a symbolic link (O_NOFOLLOW) and for anything but a regular file
    (a FIFO, a device, a folder); other OSErrors as open raises them.
    """
    from fontaine_tui.core.errors import InputError

    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise _linked(path) from None
        if exc.errno == errno.EISDIR:
            raise InputError(f"{path}: a folder, not a file; refused") from None
        raise
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        raise InputError(f"{path}: not a regular file; refused, left untouched")
    return fd


def refuse_link(path: str | Path) -> None:
    """InputError when `path` is a symbolic link (a replace would remove what it is)."""
    if os.path.islink(path):
        raise _linked(path)


def _temp_beside(path: Path, data: bytes | str) -> str:
    """Write and fsync `data` to a new temp file in `path`'s folder, and return its name."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def atomic_write(path: str | Path, data: bytes | str) -> None:
    """Replace `path` with `data` so a reader sees the old file or the new one, never half.

    A symbolic link at `path` is refused (InputError), not replaced."""
    path = Path(path)
    refuse_link(path)
    tmp = _temp_beside(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def append_line(path: str | Path, line: bytes | str) -> None:
    """Append one whole line with a single write, then fsync (never through a link)."""
    if isinstance(line, str):
        line = line.encode()
    if not line.endswith(b"\n"):
        line += b"\n"
    fd = open_own(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def locked(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` for a read-change-write across processes.

    The file is created empty if missing. The lock is an fcntl lock, so it is released when
    the holder dies. Use it for a read-change-write that must be one step across processes:
    an append to a hash chain, a bank entry, the registry.
    """
    fd = open_own(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)  # never through a link
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def create_new(path: str | Path, data: bytes | str) -> None:
    """Write a file that must not exist yet, whole.

    Raises FileExistsError if the name is taken. The data is written to a temp file, then
    hard-linked into place, which never replaces a file.
    """
    path = Path(path)
    tmp = _temp_beside(path, data)
    try:
        os.link(tmp, path)
    finally:
        os.unlink(tmp)
    fsync_dir(path.parent)


def replace_own(
    path: str | Path, data: bytes | str, ours: Callable[[bytes], bool], what: str
) -> None:
    """Write `path` as `atomic_write` does, but only over a file this program wrote.

    The write goes ahead when there is no file at `path` or when `ours(first bytes)`
    recognises the file as one this program wrote. Anything else raises InputError and stays
    as it is.
    """
    from fontaine_tui.core.errors import InputError

    path = Path(path)
    from fontaine_tui.core.readfile import open_regular

    refuse_link(path)  # it would read, and then replace, what the link points to
    try:
        with open_regular(path) as fh:
            head = fh.read(OWN_HEAD)
    except FileNotFoundError:
        head = None
    except InputError as exc:  # a folder, a pipe, a device
        raise InputError(f"{exc}; not {what}, left untouched") from None
    if head is not None and not ours(head):
        raise InputError(
            f"{path}: exists and is not {what} written by fontaine-tui; "
            "left untouched (move it away to write a new one)"
        )
    atomic_write(path, data)
