"""TensorBoard event files' records: the TFRecord framing, CRC-checked, and an Event's scalars.

Read without TensorFlow. A file is a sequence of records: a little-endian uint64 length, the
masked CRC-32C of those 8 bytes, the payload, the masked CRC-32C of the payload. The payload is a
serialized `tensorflow.Event` (tensorflow/core/util/event.proto): `wall_time` (1, double), `step`
(2, int64) and `summary` (5), whose `value`s (1) each have a `tag` (1) and either a
`simple_value` (2, float) or a `tensor` (8, a `TensorProto`: `dtype` 1, `tensor_shape` 2,
`tensor_content` 4, `float_val` 5, `double_val` 6, `int_val` 7, `int64_val` 10) — the two
ways a scalar is written (`SummaryWriter.add_scalar(..., new_style=True)` writes the tensor).

`Framer.feed(bytes)` returns the scalars of every whole record and keeps a torn tail for the
next call, so a file can be read from a byte offset while its writer appends to it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from fontaine_tui.core.log.formats.protowire import skip as _skip
from fontaine_tui.core.log.formats.protowire import varint as _varint
from fontaine_tui.core.log.records import Record

U64 = struct.Struct("<Q")
U32 = struct.Struct("<I")
F32 = struct.Struct("<f")
F64 = struct.Struct("<d")
MASK_DELTA = 0xA282EAD8
DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_HALF = 1, 2, 3, 9, 19
MAX_RECORD = 1 << 30  # a length beyond this is not a record: the framing is lost


class FramingError(ValueError):
    """The bytes are not TFRecord framing (bad length CRC): not an event file, or corrupt."""


@dataclass(frozen=True, slots=True)
class ScalarEvent:
    """One scalar summary value of an event file: its tag, step, wall time and value."""

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
    head = U64.pack(len(payload))
    return head + U32.pack(masked_crc(head)) + payload + U32.pack(masked_crc(payload))


@dataclass(slots=True)
class _TensorFields:
    """What a TensorProto's fields said so far: its dtype, raw content and listed values."""

    dtype: int = 0
    content: bytes = b""
    values: list[float] = field(default_factory=list)
    bits: int = 53  # of the listed values: a float_val's are float32s


def _tensor_value(buf: bytes) -> tuple[float, int] | None:
    """A TensorProto holding one number, with the significand bits it is stored in, or None.

    None is for anything else: a histogram, text, an image..."""
    t = _TensorFields()
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        i = _tensor_field(buf, i, key, t)
    if t.content and not t.values:
        return _content_value(t.dtype, t.content)
    return (float(t.values[0]), t.bits) if len(t.values) == 1 else None


def _tensor_field(buf: bytes, i: int, key: int, t: _TensorFields) -> int:
    """Read the TensorProto field `key` at `i` into `t`; returns where the next field starts."""
    number, wire = key >> 3, key & 7
    if number == 1 and wire == 0:
        t.dtype, i = _varint(buf, i)
        return i
    if number == 4 and wire == 2:  # tensor_content
        size, i = _varint(buf, i)
        t.content = buf[i : i + size]
        return i + size
    if number in (5, 6):  # float_val, double_val: packed or not
        t.bits = F32_BITS if number == 5 else 53
        return _real_values(buf, i, wire, F32 if number == 5 else F64, t.values)
    if number in (7, 10):  # int_val, int64_val (zigzag-free two's complement)
        return _int_values(buf, i, wire, t.values)
    return _skip(buf, i, wire)


def _real_values(buf: bytes, i: int, wire: int, real: struct.Struct, out: list[float]) -> int:
    """A float_val or double_val field's values, packed (wire 2) or one."""
    if wire != 2:
        out.append(real.unpack_from(buf, i)[0])
        return i + real.size
    size, i = _varint(buf, i)
    out += [v for (v,) in real.iter_unpack(buf[i : i + size])]
    return i + size


def _int_values(buf: bytes, i: int, wire: int, out: list[float]) -> int:
    """An int_val or int64_val field's values, packed (wire 2) or one."""
    if wire != 2:
        v, i = _varint(buf, i)
        out.append(_signed(v))
        return i
    size, i = _varint(buf, i)
    end = i + size
    while i < end:
        v, i = _varint(buf, i)
        out.append(_signed(v))
    return i


def _signed(v: int) -> float:
    """A varint read as a two's complement int64."""
    return float(v - (1 << 64) if v >= 1 << 63 else v)


_CONTENT_FORMATS = {DT_FLOAT: "<f", DT_DOUBLE: "<d", DT_HALF: "<e", DT_INT32: "<i", DT_INT64: "<q"}


def _content_value(dtype: int, content: bytes) -> tuple[float, int] | None:
    """The one number of a tensor_content of `dtype`, or None where it is not one number."""
    fmt = _CONTENT_FORMATS.get(dtype)
    if fmt is None or struct.calcsize(fmt) != len(content):
        return None
    bits = {DT_FLOAT: F32_BITS, DT_HALF: F16_BITS}.get(dtype, 53)
    return float(struct.unpack(fmt, content)[0]), bits


def _summary_values(buf: bytes, step: int, wall: float, out: list[ScalarEvent]) -> None:
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
                value = F32.unpack_from(buf, i)[0], F32_BITS
                i += 4
            elif k == 0x42:  # tensor
                m, i = _varint(buf, i)
                value = _tensor_value(buf[i : i + m])
                i += m
            else:
                i = _skip(buf, i, k & 7)
        if tag and value is not None:
            out.append(ScalarEvent(tag, step, wall, value[0], value[1]))


PURGE = ""  # the tag of the ScalarEvent that stands for a restart (SessionLog START): no real tag


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


def event_scalars(payload: bytes, out: list[ScalarEvent]) -> None:
    """Append the scalars of one serialized Event to `out`.

    There are none for file_version, graphs, ... A SessionLog START (what a writer restarted
    with `purge_step` writes) is a ScalarEvent tagged PURGE at its step: TensorBoard drops every
    event from that step on logged before it. A step outside int64, or a varint past ten bytes,
    is a ValueError (a bad record)."""
    i, n = 0, len(payload)
    step, wall = 0, 0.0
    summaries: list[bytes] = []  # protobuf merges a message field written twice
    start = False
    while i < n:
        key, i = _varint(payload, i)
        if key == 0x09:
            wall = F64.unpack_from(payload, i)[0]
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
        out.append(ScalarEvent(PURGE, step, wall, float("nan")))
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

    def _lost(self, message: str, out: list[ScalarEvent]) -> FramingError:
        self._buf = b""
        return FramingLost(message, out)

    def feed(self, data: bytes) -> list[ScalarEvent]:
        buf = self._buf + data if self._buf else data
        out: list[ScalarEvent] = []
        i, n = 0, len(buf)
        check = self.check_crc
        while n - i >= 12:
            head = buf[i : i + 8]
            (length,) = U64.unpack(head)
            if check and U32.unpack_from(buf, i + 8)[0] != masked_crc(head):
                raise self._lost(f"bad record length checksum at byte {self.offset}", out)
            if length > MAX_RECORD:
                raise self._lost(f"record length {length} at byte {self.offset}", out)
            end = i + 12 + length + 4
            if end > n:
                break  # torn: wait for the writer
            payload = buf[i + 12 : end - 4]
            if check and U32.unpack_from(buf, end - 4)[0] != masked_crc(payload):
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

    def __init__(self, message: str, scalars: list[ScalarEvent]) -> None:
        super().__init__(message)
        self.scalars = scalars
        self.records: list[Record] = []
