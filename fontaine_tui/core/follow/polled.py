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
    loop = asyncio.get_running_loop()
    held = Quiet()
    said = ""
    told: list[str] = []
    counted = NO_ODD  # the eval values not numbers sent
    seen: object = _NOTHING
    last = -math.inf
    wait = min(every, CHECK_S) if stamp is not None else every
    while not closed.is_set():
        try:
            now = await stamp() if stamp is not None else None
            if now is None or now != seen or loop.time() - last >= every:
                found, what = await read()
                seen, last = now, loop.time()
            else:  # nothing changed since the last read
                found, what = [], held.seen
            records = held.after(dec, found, what)
            notes, odd = decoder_notices(dec, kind), odd_values(dec)
            if records or notes != told or odd != counted:
                news = [n for n in notes if n not in told]
                told = notes
                fresh, counted = odd if odd != counted else None, odd
                yield Batch([], 1, note="; ".join(news), records=tuple(records), odd=fresh)
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
