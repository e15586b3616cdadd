"""TensorBoard event files read into records: the incremental decoder and the cold read's columns.

The records themselves (TFRecord framing, an Event's scalars) are tfrecord.py's. Here
`TensorBoardDecoder` groups a file's scalars into records as its writer appends them, and drops
what TensorBoard drops: the events from a step on after a restart at that step (a SessionLog
START, or a new event file of the run starting below a step its earlier files reached).
`Columns` reads a whole file into columns by tag for the cold read, at C speed where it can.
"""

from __future__ import annotations

import struct
from array import array

from fontaine_tui.core.log.formats.grouper import FieldMap, Grouper
from fontaine_tui.core.log.formats.protowire import varint as _varint
from fontaine_tui.core.log.formats.tfrecord import (
    F32,
    F32_BITS,
    F64,
    MASK_DELTA,
    MAX_RECORD,
    PURGE,
    U32,
    U64,
    Framer,
    FramingError,
    FramingLost,
    ScalarEvent,
    crc32c,
    event_scalars,
)
from fontaine_tui.core.log.records import Event, Record


class TensorBoardDecoder:
    """An event file's appended bytes in, records out (see base.py's Decoder)."""

    kind = "tensorboard"
    whole = False

    def __init__(
        self,
        fields: FieldMap | None = None,
        check_crc: bool = True,
        prefix: str = "",
        before: int = -1,
    ) -> None:
        self.framer = Framer(check_crc)
        self.grouper = Grouper(fields or FieldMap())
        self.prefix = prefix  # the key prefix of the file's folder (eventdirs.py)
        self.before = before  # the highest step the run's other files reached before this
        self._file = ""  # a new file begun (`next_file`): its first value is checked

    def next_file(self, name: str, prefix: str = "") -> None:
        """Mark the following bytes as another event file's.

        That file is of the same run, written after the ones before it."""
        self.framer = Framer(self.framer.check_crc)  # a torn tail is not the next's head
        self._file, self.prefix = name, prefix

    def _restart(self, s: ScalarEvent, out: list[Record]) -> None:
        """Take a new event file whose first value is below a step the run's earlier files reached.

        This is a restart into the folder. TensorBoard's data server
        (tensorboard-data-server, its default reader) keeps only the newer value of each
        series from that step on. So here the older files' events from that step on are
        dropped, as at a SessionLog START."""
        name, self._file = self._file, ""
        g = self.grouper
        top = max(g.top, self.before)
        if s.step >= top:  # at the step reached: two values for it, conflicting evidence
            return
        why = (
            f"{name} starts at step {s.step}, below step {top} of the run's earlier event "
            f"files (a restart into its folder): their events from step {s.step} on are "
            "dropped, as TensorBoard drops them"
        )
        if g.top >= s.step:
            g.purge(s.step, s.wall_time, why, out)
        else:
            out.append(Event(s.step - 1, s.wall_time, "resume", why))

    def feed(self, data: bytes) -> list[Record]:
        try:
            scalars = self.framer.feed(data)
        except FramingLost as exc:  # the records before the break still count
            exc.records = self._records(exc.scalars)
            raise
        return self._records(scalars)

    def _records(self, scalars: list[ScalarEvent]) -> list[Record]:
        out: list[Record] = []
        g = self.grouper
        prefix = self.prefix
        for s in scalars:
            if self._file:  # a new file: its first step
                self._restart(s, out)
            if s.tag == PURGE:
                g.purge(
                    s.step,
                    s.wall_time,
                    "a TensorBoard writer restarted at step "
                    f"{s.step} (SessionLog START): the events from step {s.step} on "
                    "logged before it are dropped",
                    out,
                )
            else:
                tag = prefix + s.tag if prefix else s.tag
                if s.bits < 53:
                    g.bits[tag] = s.bits
                g.add(s.step, s.wall_time, tag, s.value, out)
        return out

    def finish(self) -> list[Record]:
        out: list[Record] = []
        self.grouper.flush(out)
        return out


_TENSOR_F32 = b"\x42\x08\x08\x01\x2a\x04"  # tensor { dtype: DT_FLOAT, float_val: [packed, 4] }


class Columns:
    """A cold read's scalars by tag, as columns (steps, wall times, values).

    A whole file is read at C speed where it can be: the common one-value Event (simple_value,
    or the tensor style's one float) is decoded in place, anything else by `event_scalars`. The
    framing and CRC checks are the same as `Framer`'s."""

    def __init__(self) -> None:
        self.by_tag: dict[str, tuple[array, array, array]] = {}
        self.bits: dict[str, int] = {}  # tags stored in fewer significand bits than a double
        self._narrow: set[bytes] = set()  # the tag names the fast path read as float32
        self.records = 0
        self.bad_records = 0
        self.purges = 0
        self.prefix = b""  # the key prefix of the file being read (eventdirs.py)
        self._tags: dict[bytes, tuple[array, array, array]] = {}

    def _column(self, name: bytes) -> tuple[array, array, array]:
        col = self._tags.get(name)
        if col is None:
            tag = name.decode("utf-8", "replace")
            col = self.by_tag.get(tag)
            if col is None:
                col = self.by_tag[tag] = (array("q"), array("d"), array("d"))
            self._tags[name] = col
        return col

    def read(self, data: bytes) -> int:
        """Scan whole records of `data`; returns the bytes consumed (a torn tail is left)."""
        i, n = 0, len(data)
        u64, u32 = U64.unpack_from, U32.unpack_from
        crc, one_value, generic = crc32c, self._one_value, self._generic
        records = bad = 0
        while n - i >= 12:
            (length,) = u64(data, i)
            c = crc(data[i : i + 8])  # masked_crc, inlined (twice a record)
            if u32(data, i + 8)[0] != (((c >> 15) | (c << 17)) + MASK_DELTA) & 0xFFFFFFFF:
                raise FramingError(f"bad record length checksum at byte {i}")
            if length > MAX_RECORD:
                raise FramingError(f"record length {length} at byte {i}")
            end = i + 16 + length
            if end > n:
                break
            p = data[i + 12 : end - 4]
            records += 1
            c = crc(p)
            i = end
            if u32(data, end - 4)[0] != (((c >> 15) | (c << 17)) + MASK_DELTA) & 0xFFFFFFFF:
                bad += 1
            elif not one_value(p, length):
                generic(p)
        self.records += records
        self.bad_records += bad
        return i

    def _one_value(self, p: bytes, length: int) -> bool:
        """Take the one-value scalar Event in place; False where the general decoder must."""
        try:
            event = _one_value_event(p, length)
        except (IndexError, ValueError, struct.error):
            return False  # a short or odd payload: the general decoder says what it is
        if event is None:
            return False
        tag, step, wall, value = event
        name = self.prefix + tag if self.prefix else tag
        col = self._tags.get(name)
        if col is None:
            col = self._column(name)
        if name not in self._narrow:
            self._narrow.add(name)
            self.bits[name.decode("utf-8", "replace")] = F32_BITS
        steps, walls, values = col
        steps.append(step)
        walls.append(wall)
        values.append(value)
        return True

    def _generic(self, payload: bytes) -> None:
        out: list[ScalarEvent] = []
        try:
            event_scalars(payload, out)
        except (IndexError, ValueError, struct.error, UnicodeDecodeError):
            self.bad_records += 1
            return
        for s in out:
            if s.tag == PURGE:
                self.purges += 1  # the cold read reads such files record by record
                continue
            name = self.prefix + s.tag.encode()
            tag = name.decode("utf-8", "replace")
            if s.bits < 53:
                self.bits[tag] = min(s.bits, self.bits.get(tag, 53))
            steps, walls, values = self._column(name)
            steps.append(s.step)
            walls.append(s.wall_time)
            values.append(s.value)


def _one_value_event(p: bytes, length: int) -> tuple[bytes, int, float, float] | None:
    """The common one-value scalar Event's (tag, step, wall time, value), decoded in place.

    None where the payload is anything else (for the general decoder); IndexError or
    struct.error where it is short. The Event: 09 wall 10 step 2a len 0a len 0a taglen tag ...
    """
    if not (length < 128 and p[0] == 0x09 and p[9] == 0x10):
        return None
    step, j = (p[10], 11) if p[10] < 0x80 else _varint(p, 10)
    if step >= 1 << 63 or not _one_summary_to_the_end(p, j, length):
        return None
    t0 = j + 6
    k = t0 + p[j + 5]
    value = _float_value(p, k, length)
    if value is None:
        return None
    return p[t0:k], step, F64.unpack_from(p, 1)[0], value


def _one_summary_to_the_end(p: bytes, j: int, length: int) -> bool:
    """One summary holding one value, ending the payload (at `j`, after the step).

    Anything more (a field written twice, another summary) is for the general decoder."""
    return (
        p[j] == 0x2A
        and p[j + 2] == 0x0A
        and p[j + 4] == 0x0A
        and p[j + 1] == p[j + 3] + 2
        and j + 2 + p[j + 1] == length
    )


def _float_value(p: bytes, k: int, length: int) -> float | None:
    """The value at `k`: a simple_value or the tensor style's one float; None where it is else.

    After it comes the payload's end, or only the value's metadata (field 9) to the end."""
    if p[k] == 0x15:
        value, rest = F32.unpack_from(p, k + 1)[0], k + 5
    elif p[k : k + 6] == _TENSOR_F32:
        value, rest = F32.unpack_from(p, k + 6)[0], k + 10
    else:
        return None
    if rest != length and not (p[rest] == 0x4A and rest + 2 + p[rest + 1] == length):
        return None
    return value
