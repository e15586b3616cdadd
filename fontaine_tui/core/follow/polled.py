"""A foreign source read whole again and again: trainer_state.json, an MLflow or trackio store.

`poll_whole` reads it each `every` seconds, and as soon as its stamp (each file's size and
times: `stamps`) changes, checked each CHECK_S; laststep.py's `Quiet` says when its held step
goes out.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import Batch
from fontaine_tui.core.follow.laststep import Quiet
from fontaine_tui.core.log.formats.base import Decoder, decoder_notices, odd_values
from fontaine_tui.core.log.formats.rows import FormatError
from fontaine_tui.core.log.oddvalues import NONE as NO_ODD
from fontaine_tui.core.log.records import Record

CHECK_S = 0.25  # a store is checked for a change this often (sizes and times: cheap)
_NOTHING = object()  # read nothing yet


def stamps(paths: list[Path]) -> object:
    """Each file's size and times (None for one that is not there).

    They are cheap to read, and changed by any write."""
    out: list[tuple[int, int, int, int] | None] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return (tuple(paths), tuple(out))


async def poll_whole(
    dec: Decoder,
    read: Callable[[], Awaitable[tuple[list[Record], object]]],
    every: float,
    stamp: Callable[[], Awaitable[object]] | None,
    closed: asyncio.Event,
    kind: str,
    refuses: Callable[[BaseException], bool],
) -> AsyncIterator[Batch]:
    """A source read whole, each `every` seconds and as soon as it changes, until `closed`.

    `read` decodes it (new steps only) and says what it read. Its `stamp` (sizes and times) is
    checked each CHECK_S, and a change starts a read at once. A failed read is a note, reported
    once, and tried again, unless `refuses` it (the follow then ends with it). `kind` names the
    source in the decoder's notices."""
    polled = _Polled(dec, read, every, kind)
    said = ""
    wait = min(every, CHECK_S) if stamp is not None else every
    while not closed.is_set():
        try:
            batch = await polled.take(await stamp() if stamp is not None else None)
            if batch is not None:
                yield batch
            said = ""
        except (InputError, FormatError, OSError) as exc:
            if refuses(exc):
                yield Batch([], 1, note=str(exc))
                return
            if str(exc) != said:
                said = str(exc)
                yield Batch([], 1, note=f"waiting: {exc}")
        try:
            await asyncio.wait_for(closed.wait(), wait)
        except TimeoutError:
            pass


class _Polled:
    """A source read whole: when it was read last, and what was said of it so far."""

    def __init__(
        self,
        dec: Decoder,
        read: Callable[[], Awaitable[tuple[list[Record], object]]],
        every: float,
        kind: str,
    ) -> None:
        self.dec, self.read, self.every, self.kind = dec, read, every, kind
        self.held = Quiet()
        self.told: list[str] = []
        self.counted = NO_ODD  # the eval values not numbers sent
        self.seen: object = _NOTHING  # the stamp at the last read
        self.last = -math.inf  # the loop's time of the last read

    async def take(self, now: object) -> Batch | None:
        """The source read again when its stamp (`now`; None: none) moved or `every` passed.

        Returns what is news: new steps, the decoder's notices, the values not numbers."""
        loop = asyncio.get_running_loop()
        if now is None or now != self.seen or loop.time() - self.last >= self.every:
            found, what = await self.read()
            self.seen, self.last = now, loop.time()
        else:  # nothing changed since the last read
            found, what = [], self.held.seen
        return self._news(self.held.after(self.dec, found, what))

    def _news(self, records: list[Record]) -> Batch | None:
        notes, odd = decoder_notices(self.dec, self.kind), odd_values(self.dec)
        if not records and notes == self.told and odd == self.counted:
            return None
        news = [n for n in notes if n not in self.told]
        self.told = notes
        fresh, self.counted = odd if odd != self.counted else None, odd
        return Batch([], 1, note="; ".join(news), records=tuple(records), odd=fresh)
