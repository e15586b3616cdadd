"""The decoder interface every format shares, and what a decoder could not read or apply.

A decoder turns a file's bytes into the log wing's records (`TrainPoint`, `Probe`), so the
store, the rules and the console read a run from another trainer as they read ours:

- `feed(data)`: for an appended file (`whole = False`: event files, JSONL), the bytes since
  the last call; for a file rewritten in place (`whole = True`: `trainer_state.json`,
  Lightning's `metrics.csv`, an MLflow store), the whole file each time it changed. Either
  way it returns only records it has not returned before.
- `finish()`: the file is done; whatever was held back (the last step's group).

The values a step holds become records in grouper.py (`FieldMap`, `Grouper`). What a decoder
could not read (`Unread`) or did not apply (its groupers' counts) comes out in words in
`decoder_notices`: never silent. The eval values it kept that are not numbers come out counted
(`odd_values`), for the evidence gate to say.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from fontaine_tui.core.log.formats.grouper import NAN, FieldMap, Grouper, Value
from fontaine_tui.core.log.oddvalues import NONE as NO_ODD
from fontaine_tui.core.log.oddvalues import OddValues
from fontaine_tui.core.log.records import Event, Record, TrainPoint


class Decoder(Protocol):
    kind: str
    whole: bool  # True: each feed is the whole file (rewritten in place), not appended bytes

    def feed(self, data: bytes) -> list[Record]: ...

    def finish(self) -> list[Record]: ...


def numbers(row: Mapping[str, object], skip: Sequence[str] = ()) -> dict[str, float]:
    """The numeric values of a row (a JSON object, a CSV row's parsed cells), by key."""
    out: dict[str, float] = {}
    for key, value in row.items():
        if key in skip:
            continue
        x = number(value)
        if x is not None:
            out[key] = x
    return out


Row = tuple[int, float, Mapping[str, Value]]  # (step, time, values by key: a number or why not)


class Unread:
    """Entries a decoder could not read.

    They are counted in `bad_count`, and the first few are kept in `bad` (where, why) for the
    notice that reports them."""

    KEPT = 50

    def __init__(self) -> None:
        self.bad: list[tuple[str, str]] = []
        self.bad_count = 0

    def note_bad(self, where: str, why: str) -> None:
        self.bad_count += 1
        if len(self.bad) < self.KEPT:
            self.bad.append((where, why))

    def clear_bad(self) -> None:
        """A whole read again: what it cannot read is counted anew."""
        self.bad, self.bad_count = [], 0


class Whole(Unread):
    """A file rewritten in place, or a store read whole, grouped again from the start at each read.

    Rows are taken in step order, and the last step is held back until a later one or
    `finish()`, since a later write may add keys to it. Only records not returned before come
    out. A past step read again with other values comes out again, so the store sees both: a
    conflicting probe, or a train record out of order.

    A read that starts at a later step than one read before lost the rows before it: its
    writer started the file again (Lightning's CSVLogger deletes metrics.csv as a run resumes
    from its checkpoint). What was read stands: the step the last read held goes out, then a
    `resume` event to the step before the new read's first, then the new read's rows as a new
    attempt's (kept.py keeps the bytes read before, for the cold read). `started_again` counts
    such reads.

    `backwards` counts the rows of the latest read whose step goes back in the file's own
    order; `bad` lists rows that could not be read (where, why), `bad_count` counts them."""

    whole = True

    def __init__(self, fields: FieldMap | None = None) -> None:
        super().__init__()
        self.fields = fields or FieldMap()
        self.grouper = Grouper(self.fields)
        self._out: dict[tuple[str, int], set[str]] = {}
        self.backwards = 0
        self._first: int | None = None  # the first step of the reads so far
        self.started_again = 0

    def group(self, readings: Sequence[Sequence[Row]]) -> list[Record]:
        """Records from the rows of one whole read.

        A second reading, of a text that names a key twice, adds its values: the same ones
        change nothing, others conflict."""
        first = readings[0] if readings else ()
        back, top = 0, -1
        for step, _, _ in first:
            if step < top:
                back += 1
            top = max(top, step)
        self.backwards = back
        out = self._again(min((r[0] for r in first), default=None))
        grouper = Grouper(self.fields)
        for step, time, row in sorted((r for rows in readings for r in rows), key=lambda r: r[0]):
            grouper.add_row(step, time, row, out)
        self.grouper = grouper
        return self._new(out)

    def _again(self, first: int | None) -> list[Record]:
        """What a read starting at step `first` begins with: a resume where rows were lost.

        Where an earlier read held a step before `first`, the step the last read held goes
        out, then a resume to the step before `first`; what comes after is a new attempt's."""
        if first is None:
            return []
        if self._first is None or self._first >= first:
            self._first = first if self._first is None else min(self._first, first)
            return []
        held: list[Record] = []
        self.grouper.flush(held)
        out = self._new(held)
        self._out, self._first = {}, first
        self.started_again += 1
        out.append(
            Event(
                first - 1,
                NAN,
                "resume",
                f"the file started again at step {first}: the rows read before it stand",
            )
        )
        return out

    def _new(self, records: list[Record]) -> list[Record]:
        fresh = []
        for rec in records:
            seen = self._out.setdefault((type(rec).__name__, rec.step), set())
            # a train record read again once its step has a later row (an eval logged after
            # the loss) carries that row's time: the same record, sent once
            ident = repr(replace(rec, time=NAN, step_s=NAN) if isinstance(rec, TrainPoint) else rec)
            if ident not in seen:
                seen.add(ident)
                fresh.append(rec)
        return fresh

    def settle_train(self) -> list[Record]:
        """The held step's train record now (Grouper.settle_train), sent once."""
        out: list[Record] = []
        self.grouper.settle_train(out)
        return self._new(out)

    def settle(self) -> list[Record]:
        """The held step out now, the source having been quiet.

        What the next read groups for it again is not repeated, and a key it adds later
        completes its probe."""
        out: list[Record] = []
        self.grouper.flush(out)
        return self._new(out)

    def finish(self) -> list[Record]:
        return self.settle()


def number(value: object) -> float | None:
    """A JSON or cell value as a float, or None when it is not a number (a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer past a float's range
        return math.inf if value > 0 else -math.inf


def step_of(value: object) -> int | str:
    """A row's step as a non-negative integer, or why it is not one."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # 80.0 is step 80; 80.9 is no step
    if isinstance(value, bool) or not isinstance(value, int):
        return f"step {value!r} is not a whole number"
    if not 0 <= value < 2**63:
        return f"step {value} is out of range (expected 0 to 2^63 - 1)"
    return value


def groupers(dec: Decoder) -> list[Grouper]:
    """Every step grouper of a decoder (a JSONL log split by a probe field has two)."""
    many = getattr(dec, "groupers", None)
    if many is not None:
        return list(many)
    one = getattr(dec, "grouper", None)
    return [one] if one is not None else []


def decoder_notices(dec: Decoder, name: str) -> list[str]:
    """What a decoder read but did not apply, in words: never silent."""
    out = []
    bad, count = (dec.bad, dec.bad_count) if isinstance(dec, Unread) else ([], 0)
    if count:
        shown = "; ".join(f"{where}: {why}" for where, why in bad[:3])
        out.append(
            f"{count} unreadable entr{'y' if count == 1 else 'ies'} in {name}, not "
            f"applied ({shown}{'; ...' if count > 3 else ''})"
        )
    out += decoder_notices_of(groupers(dec))
    out += list(getattr(dec, "notes", ()))  # what a decoder says of how it read (printed.py)
    back = getattr(dec, "backwards", 0)
    if back:
        out.append(
            f"{back} entr{'y' if back == 1 else 'ies'} going back in steps in the "
            "file's order (read at their step)"
        )
    return out


def decoder_notices_of(found: list[Grouper]) -> list[str]:
    """What step groupers did not apply as logged, in words (the values not numbers: odd_values)."""
    out = []
    for g in found:
        if g.late:
            out.append(f"{g.late} value(s) logged at a step already past, not applied")
        if g.conflicts:
            out.append(
                f"{g.conflicts} train value(s) logged twice for one step with another "
                f"value, the first kept: {'; '.join(g.conflict_notes[:5])}"
            )
    return out


def odd_values(dec: Decoder) -> OddValues:
    """The eval values a decoder's groupers kept that are not numbers.

    They are no notice: which key held one, at which step and what it was is a probe's value
    (a rule reading one is UNDECIDABLE there), so the store keeps them and a surface says them
    through the evidence gate (core/log/oddvalues.py)."""
    return sum((g.odd_values for g in groupers(dec)), NO_ODD)


def keys_seen(dec: Decoder) -> list[str]:
    """Every key a decoder's groupers saw, in the order first seen."""
    seen: dict[str, None] = {}
    for g in groupers(dec):
        seen.update(g.keys)
    return list(seen)
