"""TensorBoard event files (`events.out.tfevents.*`) read without TensorFlow.

The reader handles the TFRecord framing, CRC-checked, and the few protobuf fields of an `Event` that
carry a scalar.

A file is a sequence of records: a little-endian uint64 length, the masked CRC-32C of those
8 bytes, the payload, the masked CRC-32C of the payload. The payload is a serialized
`tensorflow.Event` (tensorflow/core/util/event.proto): `wall_time` (1, double), `step`
(2, int64) and `summary` (5), whose `value`s (1) each have a `tag` (1) and either a
`simple_value` (2, float) or a `tensor` (8, a `TensorProto`: `dtype` 1, `tensor_shape` 2,
`tensor_content` 4, `float_val` 5, `double_val` 6, `int_val` 7, `int64_val` 10) — the two
ways a scalar is written (`SummaryWriter.add_scalar(..., new_style=True)` writes the tensor).

`Framer.feed(bytes)` returns the scalars of every whole record and keeps a torn tail for the
next call, so a file can be read from a byte offset while its writer appends to it.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable
from dataclasses import dataclass

from fontaine_tui.core.log.formats.grouper import FieldMap, Grouper
from fontaine_tui.core.log.formats.protowire import skip as _skip
from fontaine_tui.core.log.formats.protowire import varint as _varint
from fontaine_tui.core.log.records import Event, Record

_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
MASK_DELTA = 0xA282EAD8
DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_HALF = 1, 2, 3, 9, 19
MAX_RECORD = 1 << 30  # a length beyond this is not a record: the framing is lost


class FramingError(ValueError):
    """The bytes are not TFRecord framing (bad length CRC): not an event file, or corrupt."""


@dataclass(frozen=True, slots=True)
class Scalar:
    tag: str
    step: int
    wall_time: float
    value: float
    bits: int = 53  # the significand bits it was stored with: a float32 has 24


F32_BITS, F16_BITS = 24, 11


def _crc32c_table() -> Callable[[bytes], int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)

    def crc(data: bytes) -> int:
        c = 0xFFFFFFFF
        for b in data:
            c = table[(c ^ b) & 0xFF] ^ (c >> 8)
        return c ^ 0xFFFFFFFF

    return crc


def _crc32c() -> tuple[Callable[[bytes], int], str]:
    """The CRC-32C function, and which implementation it is ("c" or "python").

    google-crc32c's C implementation is used when installed (the `tensorboard` extra), else a
    table in Python (the same numbers, some 100x slower)."""
    try:
        import google_crc32c
    except ImportError:
        return _crc32c_table(), "python"
    if google_crc32c.implementation != "c":
        return _crc32c_table(), "python"
    return google_crc32c.value, "c"


crc32c, CRC_IMPLEMENTATION = _crc32c()


def masked_crc(data: bytes) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + MASK_DELTA) & 0xFFFFFFFF


def frame(payload: bytes) -> bytes:
    """One TFRecord (what a writer appends): for tests and the bench's files."""
    head = _U64.pack(len(payload))
    return head + _U32.pack(masked_crc(head)) + payload + _U32.pack(masked_crc(payload))


def _tensor_value(buf: bytes) -> tuple[float, int] | None:
    """A TensorProto holding one number, with the significand bits it is stored in, or None.

    None is for anything else: a histogram, text, an image..."""
    dtype, i, n = 0, 0, len(buf)
    values: list[float] = []
    bits = 53
    content = b""
    while i < n:
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if field == 1 and wire == 0:
            dtype, i = _varint(buf, i)
        elif field == 4 and wire == 2:
            size, i = _varint(buf, i)
            content, i = buf[i : i + size], i + size
        elif field in (5, 6):  # float_val, double_val: packed or not
            real = _F32 if field == 5 else _F64
            bits = F32_BITS if field == 5 else 53
            if wire == 2:
                size, i = _varint(buf, i)
                values += [v for (v,) in real.iter_unpack(buf[i : i + size])]
                i += size
            else:
                values.append(real.unpack_from(buf, i)[0])
                i += real.size
        elif field in (7, 10):  # int_val, int64_val (zigzag-free two's complement)
            if wire == 2:
                size, i = _varint(buf, i)
                end = i + size
                while i < end:
                    v, i = _varint(buf, i)
                    values.append(float(v - (1 << 64) if v >= 1 << 63 else v))
            else:
                v, i = _varint(buf, i)
                values.append(float(v - (1 << 64) if v >= 1 << 63 else v))
        else:
            i = _skip(buf, i, wire)
    if content and not values:
        fmt = {DT_FLOAT: "<f", DT_DOUBLE: "<d", DT_HALF: "<e", DT_INT32: "<i", DT_INT64: "<q"}.get(
            dtype
        )
        if fmt is None or struct.calcsize(fmt) != len(content):
            return None
        bits = {DT_FLOAT: F32_BITS, DT_HALF: F16_BITS}.get(dtype, 53)
        return float(struct.unpack(fmt, content)[0]), bits
    return (float(values[0]), bits) if len(values) == 1 else None


def _summary_values(buf: bytes, step: int, wall: float, out: list[Scalar]) -> None:
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        if key != 0x0A:  # Summary.value, length-delimited
            i = _skip(buf, i, key & 7)
            continue
        size, i = _varint(buf, i)
        end = i + size
        tag, value = "", None
        while i < end:
            k, i = _varint(buf, i)
            if k == 0x0A:  # tag
                m, i = _varint(buf, i)
                tag = buf[i : i + m].decode("utf-8", "replace")
                i += m
            elif k == 0x15:  # simple_value
                value = _F32.unpack_from(buf, i)[0], F32_BITS
                i += 4
            elif k == 0x42:  # tensor
                m, i = _varint(buf, i)
                value = _tensor_value(buf[i : i + m])
                i += m
            else:
                i = _skip(buf, i, k & 7)
        if tag and value is not None:
            out.append(Scalar(tag, step, wall, value[0], value[1]))


PURGE = ""  # the tag of the Scalar that stands for a restart (SessionLog START): no real tag


def _session_start(buf: bytes) -> bool:
    """A SessionLog whose status (field 1) is START (1)."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        if key == 0x08:
            status, i = _varint(buf, i)
            return status == 1
        i = _skip(buf, i, key & 7)
    return False


def event_scalars(payload: bytes, out: list[Scalar]) -> None:
    """Append the scalars of one serialized Event to `out`.

    There are none for file_version, graphs, ... A SessionLog START (what a writer restarted
    with `purge_step` writes) is a Scalar tagged PURGE at its step: TensorBoard drops every
    event from that step on logged before it. A step outside int64, or a varint past ten bytes,
    is a ValueError (a bad record)."""
    i, n = 0, len(payload)
    step, wall = 0, 0.0
    summaries: list[bytes] = []  # protobuf merges a message field written twice
    start = False
    while i < n:
        key, i = _varint(payload, i)
        if key == 0x09:
            wall = _F64.unpack_from(payload, i)[0]
            i += 8
        elif key == 0x10:
            step, i = _varint(payload, i)
            if step >= 1 << 63:
                step -= 1 << 64
        elif key == 0x2A:
            size, i = _varint(payload, i)
            summaries.append(payload[i : i + size])
            i += size
        elif key == 0x3A:  # session_log
            size, i = _varint(payload, i)
            start = _session_start(payload[i : i + size])
            i += size
        else:
            i = _skip(payload, i, key & 7)
    if step < 0:
        raise ValueError(f"step {step} (negative or past 2^63)")
    if start:
        out.append(Scalar(PURGE, step, wall, float("nan")))
    for summary in summaries:  # the last step field written is the step (protobuf's rule)
        _summary_values(summary, step, wall, out)


class Framer:
    """Whole records out of appended bytes; the torn tail kept for the next feed.

    A record whose payload CRC does not match is counted in `bad_records` and skipped (its
    length was good, so the framing holds); a bad length CRC means the bytes are not framing
    at all (FramingError), as does a length beyond MAX_RECORD."""

    def __init__(self, check_crc: bool = True) -> None:
        self._buf = b""
        self.offset = 0  # bytes of the file consumed as whole records
        self.records = 0
        self.bad_records = 0
        self.check_crc = check_crc

    @property
    def pending(self) -> int:
        """Bytes of a torn record waiting for the rest of it."""
        return len(self._buf)

    def reset(self) -> None:
        self._buf, self.offset = b"", 0

    def _lost(self, message: str, out: list[Scalar]) -> FramingError:
        self._buf = b""
        return FramingLost(message, out)

    def feed(self, data: bytes) -> list[Scalar]:
        buf = self._buf + data if self._buf else data
        out: list[Scalar] = []
        i, n = 0, len(buf)
        check = self.check_crc
        while n - i >= 12:
            head = buf[i : i + 8]
            (length,) = _U64.unpack(head)
            if check and _U32.unpack_from(buf, i + 8)[0] != masked_crc(head):
                raise self._lost(f"bad record length checksum at byte {self.offset}", out)
            if length > MAX_RECORD:
                raise self._lost(f"record length {length} at byte {self.offset}", out)
            end = i + 12 + length + 4
            if end > n:
                break  # torn: wait for the writer
            payload = buf[i + 12 : end - 4]
            if check and _U32.unpack_from(buf, end - 4)[0] != masked_crc(payload):
                self.bad_records += 1
            else:
                try:
                    event_scalars(payload, out)
                except (IndexError, ValueError, struct.error, UnicodeDecodeError):
                    self.bad_records += 1  # a payload that is not an Event
            self.records += 1
            self.offset += end - i
            i = end
        self._buf = bytes(buf[i:])
        return out


class FramingLost(FramingError):
    """The framing was lost after some whole records of the same bytes.

    Those records are in `scalars` (and, from a decoder, in `records`), so nothing read before
    is dropped."""

    def __init__(self, message: str, scalars: list[Scalar]) -> None:
        super().__init__(message)
        self.scalars = scalars
        self.records: list[Record] = []


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

    def _restart(self, s: Scalar, out: list[Record]) -> None:
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

    def _records(self, scalars: list[Scalar]) -> list[Record]:
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
        u64, u32, f64, f32 = _U64.unpack_from, _U32.unpack_from, _F64.unpack_from, _F32.unpack_from
        crc, column, generic = crc32c, self._column, self._generic
        tags, narrow, pre = self._tags, self._narrow, self.prefix
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
            if u32(data, end - 4)[0] != (((c >> 15) | (c << 17)) + MASK_DELTA) & 0xFFFFFFFF:
                bad += 1
                i = end
                continue
            i = end
            # the one-value scalar Event: 09 wall 10 step 2a len 0a len 0a taglen tag ...
            try:
                if length < 128 and p[0] == 0x09 and p[9] == 0x10:
                    step = p[10]
                    j = 11
                    if step >= 0x80:
                        step, j = _varint(p, 10)
                        if step >= 1 << 63:
                            generic(p)  # says it is a bad record
                            continue
                    # one summary holding one value, ending the payload: anything more
                    # (a field written twice, another summary) is for the general decoder
                    if (
                        p[j] == 0x2A
                        and p[j + 2] == 0x0A
                        and p[j + 4] == 0x0A
                        and p[j + 1] == p[j + 3] + 2
                        and j + 2 + p[j + 1] == length
                    ):
                        t0 = j + 6
                        k = t0 + p[j + 5]
                        if p[k] == 0x15:
                            value, rest = f32(p, k + 1)[0], k + 5
                        elif p[k : k + 6] == _TENSOR_F32:
                            value, rest = f32(p, k + 6)[0], k + 10
                        else:
                            generic(p)
                            continue
                        # then the end, or only the value's metadata (field 9) to the end
                        if rest != length and not (
                            p[rest] == 0x4A and rest + 2 + p[rest + 1] == length
                        ):
                            generic(p)
                            continue
                        name = pre + p[t0:k] if pre else p[t0:k]
                        col = tags.get(name)
                        if col is None:
                            col = column(name)
                        if name not in narrow:
                            narrow.add(name)
                            self.bits[name.decode("utf-8", "replace")] = F32_BITS
                        steps, walls, values = col
                        steps.append(step)
                        walls.append(f64(p, 1)[0])
                        values.append(value)
                        continue
            except (IndexError, ValueError, struct.error):
                pass  # a short or odd payload: the general decoder says what it is
            generic(p)
        self.records += records
        self.bad_records += bad
        return i

    def _generic(self, payload: bytes) -> None:
        out: list[Scalar] = []
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
