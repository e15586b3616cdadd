"""What every follower shares: the Batch it yields, the RunSource protocol, the timings.

The local follower is in `local.py`, the SSH one in `ssh.py`, the finished-log replay in
`replay.py`; all yield the same `Batch` and cut lines with the log wing's `LineCutter`
(`core/log/lines.py`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from fontaine_tui.core.log.lines import LineCutter
from fontaine_tui.core.log.oddvalues import OddValues
from fontaine_tui.core.log.records import Record
from fontaine_tui.core.runfolder import LOG

CHUNK = 4 << 20  # most bytes read per batch (keeps a catch-up read responsive)
HEAD = 4096  # fingerprint length: truncate-and-refill past the old size shows here
THREAD_READ = 1 << 20  # reads expected to be larger than this go to a worker thread
POLL_WATCHED = 0.25  # re-check this often even with inotify (writes from other hosts)
MIN_GAP = 0.02  # reads at most this often: a fast writer's lines come in batches
POLL_ONLY = 0.04  # without inotify: ~0.35 % of a core per followed file, p95 < 50 ms


@dataclass(frozen=True, slots=True)
class Batch:
    lines: list[bytes]  # complete lines, newline stripped (a CR may remain)
    first_line: int  # 1-based line number of lines[0] in the current segment
    segment: bool = False  # these lines start another file (`name`): a rotated segment read
    # first, or the file that took the log's name after a rotation or
    # replacement. Keep everything read before; numbers restart at 1.
    note: str = ""  # a status change to show the user
    end_offset: int = 0  # byte offset just past the last complete line
    name: str = ""  # with `segment`: the file the lines now come from
    records: tuple[Record, ...] = ()  # a foreign run's records, decoded (follow/foreign.py)
    # a foreign run's eval values that are not numbers, as its decoders count them now (None:
    # as before); no note says them, they are probe values (core/log/oddvalues.py)
    odd: OddValues | None = None


@dataclass(frozen=True, slots=True)
class Chunk:
    """Bytes of a followed file that is not read as lines (`LocalRun.follow_files`)."""

    name: str
    data: bytes
    offset: int  # where `data` starts in the file
    restart: bool = False  # the file was truncated or replaced: this reads it from byte 0
    at_end: bool = False  # the file's current end was reached (data may be empty)
    idle: bool = False  # no file had new bytes this round (`name` is "")


@runtime_checkable
class RunSource(Protocol):
    label: str

    def follow(self, name: str = LOG) -> AsyncIterator[Batch]: ...

    async def read_bytes(self, name: str) -> bytes | None: ...

    async def close(self) -> None: ...


def finish(cutter: LineCutter) -> list[Batch]:
    """The file is done: its torn last line (it will never be finished), if any, as a batch."""
    lines, first = cutter.flush()
    return [Batch(lines, first, end_offset=cutter.offset)] if lines else []
