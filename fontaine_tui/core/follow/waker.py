"""Wake a follower when a local file may have changed: inotify where there is one, else a poll.

A wake-up only says "look again": the follower reads to the end of the file each time, so a
missed or absent event costs latency, never data.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
import struct
from collections.abc import Iterator
from pathlib import Path

from fontaine_tui.core.follow.base import POLL_ONLY, POLL_WATCHED

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


def _events(data: bytes) -> Iterator[tuple[int, int, bytes]]:
    """The inotify events in what one read returned: (watch, mask, name) each."""
    pos = 0
    while pos + _EVENT.size <= len(data):
        wd, mask, _cookie, length = _EVENT.unpack_from(data, pos)
        name = data[pos + _EVENT.size : pos + _EVENT.size + length].rstrip(b"\0")
        pos += _EVENT.size + length
        yield wd, mask, name


class Waker:
    """Sleep until the watched folder says `name` changed, or `poll_s` passes (polling fallback)."""

    def __init__(self, folder: Path, name: str, poll_s: float | None, inotify: bool = True) -> None:
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
        if not self._use or _LIBC is None or self._fd >= 0:  # _use: _LIBC is not None
            return
        fd = _LIBC.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            self._use = False
            return
        # with no name (follow_files: any file of the folder), writes to its files wake too
        mask = _IN_DIR if self.name else _IN_DIR | _IN_FILE
        wd = _LIBC.inotify_add_watch(fd, os.fsencode(self.folder), mask)
        if wd < 0:
            os.close(fd)  # the folder may not exist yet: retry on the next wait
            return
        self._fd, self._dir_wd, self._file_wd = fd, wd, -1

    def track(self, path: Path) -> None:
        """Watch writes to the file now at `path` (call after each open)."""
        self._watch()
        if self._fd < 0:
            return
        assert _LIBC is not None  # a watch is up, so _watch found libc
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
        for wd, mask, name in _events(data):
            if wd == self._dir_wd and mask & _IN_SELF:
                self._unwatch()  # the folder went away: poll until it is back
                self._event.set()
                return
            if self._ours(wd, mask, name):
                self._event.set()

    def _ours(self, wd: int, mask: int, name: bytes) -> bool:
        """Whether an event may change what is followed.

        That is a write to the file, its name (any name, with no name followed), or events
        lost to an overflow."""
        return (
            wd == self._file_wd or name == self.name or not self.name or bool(mask & _IN_OVERFLOW)
        )

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

    def wake(self) -> None:
        """End the current wait now (the follower is closing)."""
        self._event.set()

    def close(self) -> None:
        self._unwatch()
