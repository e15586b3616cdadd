"""W&B run files (`run-<id>.wandb`) read without wandb.

The files are in `wandb/offline-run-*/` and `wandb/run-*/` alike. The reader handles LevelDB's log
framing, CRC-checked, and the few protobuf fields of a `wandb_internal.Record` that carry a run's
history, its id, how it exited, and the alerts it raised (`run.alert`, field 10).

The file is a 7-byte header (`:W&B`, the magic 0xBEE1 little-endian, a version byte), then
32 KiB blocks of records. A record is a 7-byte head (a little-endian uint32 checksum, the
data's length as a uint16, its type: FULL 1, or FIRST 2, MIDDLE 3 and LAST 4 for a record
cut across blocks) and its data; a block's last bytes, too few for a head, are padding. The
checksum is zlib's CRC-32 of the type byte and the data (what wandb writes; LevelDB's own
logs use a masked CRC-32C).

A Record (wandb/proto/wandb_internal.proto): `history` (2): its `item`s (1), each a `key`
(1) or a `nested_key` path (2, read joined by "."), and a `value_json` (16; `number` 6 and
`integer` 5 also read), and its `step` (2, `num` 1); `run` (17): `run_id` 1, `project` 3,
`display_name` 8; `exit` (18): `exit_code` 1. Keys starting with `_` are wandb's own
(`_step`, `_timestamp`, `_runtime`, `_wandb`): the step and the time, not metrics.

`feed(bytes)` takes the file's appended bytes from any offset on: a torn last record waits
for the rest of it. A record whose checksum fails, a head that is not one (the rest of its
block is then unread, and reported so), a record that does not decode, a train value that is
not a number: each is counted (base.py's Unread) and reported in the notices, never applied. An
eval value that is not a number is kept as what it is (the probe's `not_numbers`, counted in the
grouper's `odd_values`): which key, step and value it was is a probe's value, said through the
evidence gate (core/log/oddvalues.py), never in a notice.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from fontaine_tui.core.log import jsontext
from fontaine_tui.core.log.formats.base import Unread, number, step_of
from fontaine_tui.core.log.formats.grouper import NAN, FieldMap, Grouper
from fontaine_tui.core.log.formats.protowire import signed64, skip, varint
from fontaine_tui.core.log.formats.rows import FormatError
from fontaine_tui.core.log.records import BadAlert, Event, Record, make_alert

IDENT = b":W&B\xe1\xbe"  # the header's ident and magic; its seventh byte is the version
HEADER_LEN = 7
BLOCK = 32768
HEAD = struct.Struct("<IHB")  # checksum, length, type
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
TYPE_CRC = {t: zlib.crc32(bytes([t])) for t in (FULL, FIRST, MIDDLE, LAST)}
MAX_RECORD = 1 << 28  # the parts of one record beyond this: not a record
_F64 = struct.Struct("<d")
SHOWN = 40  # characters of a value not read quoted in its notice


class LogFramer:
    """Whole records out of a run file's appended bytes, each with the byte it starts at.

    What it cannot read goes to `note(where, why)`."""

    def __init__(self, note: Callable[[str, str], None]) -> None:
        self.note = note
        self._buf = b""
        self._at = 0  # the file offset of _buf[0]
        self._drop = 0  # bytes still to pass over: the rest of a block whose framing is lost
        self._parts: list[bytes] = []  # a record cut across blocks, so far
        self._start = 0  # the byte its first part starts at
        self.header = False
        self.version = -1

    @property
    def pending(self) -> int:
        """Bytes of a record not yet whole (its parts so far, or a torn head or data)."""
        return len(self._buf) + sum(map(len, self._parts))

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        buf = self._buf + data if self._buf else data
        out: list[tuple[int, bytes]] = []
        i, n = 0, len(buf)
        if not self.header:
            if n < HEADER_LEN:
                self._buf = buf
                return out
            i = self._read_header(buf)
        while True:
            i = self._pass_dropped(i, n)
            if self._drop:
                break
            left = BLOCK - (self._at + i) % BLOCK
            if left < HEAD.size:  # a block's trailer: padding
                if n - i < left:
                    break
                i += left
                continue
            if n - i < HEAD.size:
                break
            end = self._record(buf, i, left, out)
            if end is None:
                break  # torn: the writer has not written all of it yet
            i = end
        self._buf = bytes(buf[i:])
        self._at += i
        return out

    def _read_header(self, buf: bytes) -> int:
        """The file's header read (FormatError where it is not W&B's); where the blocks start."""
        if buf[: len(IDENT)] != IDENT:
            raise FormatError(
                f"not a W&B run file (expected the :W&B header, got {bytes(buf[:HEADER_LEN])!r})"
            )
        self.header, self.version = True, buf[HEADER_LEN - 1]
        return HEADER_LEN

    def _pass_dropped(self, i: int, n: int) -> int:
        """Pass over what is left of a block whose framing is lost, as far as the bytes go."""
        take = min(self._drop, n - i)
        self._drop -= take
        return i + take

    def _record(self, buf: bytes, i: int, left: int, out: list[tuple[int, bytes]]) -> int | None:
        """Read the record whose head is at `i` (`left` bytes to its block's end).

        Returns where the next one starts, or None where it is not all written yet. A head that
        is not one leaves the rest of the block to pass over; a record failing its checksum is
        noted and passed over."""
        where = self._at + i
        crc, length, kind = HEAD.unpack_from(buf, i)
        if kind not in TYPE_CRC or HEAD.size + length > left:
            self._lost(where, left)
            self._drop = left
            return i
        end = i + HEAD.size + length
        if end > len(buf):
            return None
        data = buf[i + HEAD.size : end]
        if zlib.crc32(data, TYPE_CRC[kind]) != crc:
            self.note(f"byte {where}", "a record that fails its checksum")
            if self._parts:
                self._cut(where)
        else:
            self._part(where, kind, data, out)
        return end

    def _lost(self, where: int, left: int) -> None:
        self.note(
            f"byte {where}", f"not a record head: the rest of its block ({left} bytes) is not read"
        )
        if self._parts:
            self._cut(where)

    def _cut(self, where: int) -> None:
        self.note(
            f"byte {self._start}", f"a record cut across blocks lost its part at byte {where}"
        )
        self._parts = []

    def _part(self, where: int, kind: int, data: bytes, out: list[tuple[int, bytes]]) -> None:
        if kind in (FULL, FIRST) and self._parts:
            self.note(f"byte {self._start}", "a record cut across blocks without its last part")
            self._parts = []
        if kind == FULL:
            out.append((where, data))
        elif kind == FIRST:
            self._parts, self._start = [data], where
        elif not self._parts:
            self.note(f"byte {where}", "a part of a record without its first part")
        elif kind == MIDDLE:
            self._parts.append(data)
            if sum(map(len, self._parts)) > MAX_RECORD:
                self._cut(where)
        else:
            out.append((self._start, b"".join([*self._parts, data])))
            self._parts = []

    def finish(self) -> None:
        """The file is done: a record not yet whole is counted (cut short)."""
        left = BLOCK - self._at % BLOCK
        torn = (
            len(self._buf)
            if self._buf
            and not (left < HEAD.size and len(self._buf) < left and not self._buf.strip(b"\0"))
            else 0
        )
        torn += sum(map(len, self._parts))
        if torn:
            self.note(
                f"byte {self._start if self._parts else self._at}",
                f"the last {torn} bytes are a record not yet whole (being written, or cut short)",
            )
        self._buf, self._parts = b"", []


# -- the Record's fields -----------------------------------------------------------------------

Item = tuple[str, object]  # a history item: its key, and its value as JSON reads it (or text)


class NotNumber(str):
    """A history value that is not JSON a number is read from (its text, shown)."""


def _text(buf: bytes) -> str:
    return buf.decode("utf-8", "replace")


def _fields(buf: bytes) -> list[tuple[int, int, int, bytes]]:
    """A message's fields in order.

    Each is (number, wire type, the value of a varint, the bytes of a length-delimited field or
    of a fixed one)."""
    out: list[tuple[int, int, int, bytes]] = []
    i, n = 0, len(buf)
    while i < n:
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
            out.append((field, wire, value, b""))
            continue
        if wire == 2:
            size, i = varint(buf, i)
            j = i + size
        else:
            j = skip(buf, i, wire)
        if j > n:
            raise ValueError("a field past the record's end")
        out.append((field, wire, 0, buf[i:j]))
        i = j
    return out


def _item(buf: bytes) -> Item:
    key, path = "", []
    value: object = NotNumber("no value")
    for field, wire, v, raw in _fields(buf):
        if field == 1 and wire == 2:
            key = _text(raw)
        elif field == 2 and wire == 2:
            path.append(_text(raw))
        else:
            value = _item_value(field, wire, v, raw, value)
    return key or ".".join(path), value


def _item_value(field: int, wire: int, v: int, raw: bytes, value: object) -> object:
    """The item's value as its field `field` says it (`value`, as before, for another field)."""
    read = _ITEM_VALUES.get((field, wire))
    if read is not None:
        return read(v, raw)
    if field in (3, 4, 7, 8):  # none, boolean, text, json: no number
        return NotNumber(
            _text(raw) if wire == 2 else "null" if field == 3 else f"{bool(v)}".lower()
        )
    return value


def _from_json(v: int, raw: bytes) -> object:
    return _json_value(_text(raw))


def _from_double(v: int, raw: bytes) -> object:
    return _F64.unpack(raw)[0]


def _from_sint64(v: int, raw: bytes) -> object:
    return (v >> 1) ^ -(v & 1)  # zigzag


# the item fields holding its value, by (field, wire type): value_json, number, integer
_ITEM_VALUES: dict[tuple[int, int], Callable[[int, bytes], object]] = {
    (16, 2): _from_json,
    (6, 1): _from_double,
    (5, 0): _from_sint64,
}


def _json_value(text: str) -> object:
    """A value_json's value: JSON's; a string, or text that is not JSON, shown quoted."""
    try:
        value: object = jsontext.loads(text)
    except ValueError:
        value = NotNumber(text)
    return NotNumber(repr(value)) if isinstance(value, str) else value


@dataclass(frozen=True, slots=True)
class WandbRecord:
    """What a Record holds that is read: its kind and that kind's fields.

    The kind is "history", "run", "exit", "alert", or "" for any other."""

    kind: str
    items: tuple[Item, ...] = ()
    num: int | None = None  # a history row's step field
    run: tuple[str, str, str] = ("", "", "")  # id, project, display name
    code: int = 0  # the exit code
    alert: tuple[str, str, str] = ("", "", "")  # an AlertRecord's title, text, level


def _history(buf: bytes) -> WandbRecord:
    items: list[Item] = []
    num: int | None = None
    for f, w, _, raw in _fields(buf):
        if f == 1 and w == 2:
            items.append(_item(raw))
        elif f == 2 and w == 2:
            for g, u, y, _ in _fields(raw):
                if g == 1 and u == 0:
                    num = signed64(y)
    return WandbRecord("history", tuple(items), num)


def _run_record(buf: bytes) -> WandbRecord:
    run = {f: _text(x) for f, w, _, x in _fields(buf) if f in (1, 3, 8) and w == 2}
    return WandbRecord("run", run=(run.get(1, ""), run.get(3, ""), run.get(8, "")))


def _exit_record(buf: bytes) -> WandbRecord:
    code = 0
    for f, w, v, _ in _fields(buf):
        if f == 1 and w == 0:  # an int32, sign-extended to 64 bits when negative
            code = v & 0xFFFFFFFF
            code = code - (1 << 32) if code >= 1 << 31 else code
    return WandbRecord("exit", code=code)


def _alert_record(buf: bytes) -> WandbRecord:
    """An AlertRecord: title 1, text 2, level 3 (strings)."""
    said = {f: _text(x) for f, w, _, x in _fields(buf) if f in (1, 2, 3) and w == 2}
    return WandbRecord("alert", alert=(said.get(1, ""), said.get(2, ""), said.get(3, "")))


# a Record's fields that are read (each a message, length-delimited), by number
_RECORD_FIELDS = {2: _history, 17: _run_record, 18: _exit_record, 10: _alert_record}


def parse_record(buf: bytes) -> WandbRecord:
    """The fields read of one serialized Record (the last read of them, where several are).

    Raises ValueError (or IndexError) when the bytes are not one."""
    found = WandbRecord("")
    for field, wire, _, raw in _fields(buf):
        read = _RECORD_FIELDS.get(field) if wire == 2 else None
        if read is not None:
            found = read(raw)
    return found


class WandbDecoder(Unread):
    """A W&B run file's appended bytes in, records out (see base.py's Decoder).

    Each history row goes out at its `_step` (or the field map's step key), at its `_timestamp`.
    The exit record is an `end` event (exit code 0) or an `error` event (any other), at the last
    step.

    A trainer's step key (`train/global_step`) that goes back inside one run is the trainer
    resumed from a checkpoint into the same W&B run: the later rows take over from their first
    step (`_step_back`), and the rows going back are said in `notes`. W&B's own `_step` never
    goes back (wandb drops such a log call): a row of it that does is late, or a second value."""

    kind = "wandb"
    whole = False

    def __init__(self, fields: FieldMap | None = None) -> None:
        super().__init__()
        f = fields or FieldMap()
        self.grouper = Grouper(f)
        self.step_key = f.step if f.step != "step" else "_step"
        self.time_key = f.time or "_timestamp"
        self.framer = LogFramer(self.note_bad)
        self.run_id = self.project = self.name = ""
        self.exit_code: int | None = None
        self.records = 0
        self.attempts = 1
        self._time = NAN
        self._top = -1
        self._resumed = ""  # a later attempt's folder, until its first step is read
        self._backs: list[tuple[int, int, int]] = []  # the step key going back: to, from, byte
        self._back_top = -1  # the step the last going back left: rows below it go back
        self.back_rows = 0

    def describe(self) -> str:
        """The run read, for a report's "log ..." line."""
        if not self.run_id:
            return "W&B run"
        named = f"{self.name}, " if self.name else ""
        more = f", {self.attempts} attempts" if self.attempts > 1 else ""
        return f"W&B run {self.run_id} ({named}project {self.project or '?'}{more})"

    def next_file(self, name: str) -> None:
        """Mark the following bytes as the run's next attempt's file (`name`: its folder).

        wandb writes a run resumed (`wandb.init(id=..., resume=...)`) into a folder of its
        own. The attempt's file has its own framing, and its first step is checked
        (`_resume`)."""
        self.framer.finish()  # a torn tail is said, and is not the next file's head
        self.framer = LogFramer(lambda where, why: self.note_bad(f"{name} {where}", why))
        self._resumed = name
        self.attempts += 1

    def _resume(self, step: int, when: float, out: list[Record]) -> None:
        """Take a later attempt whose first step is below the step the run reached.

        The attempt resumed the run from a checkpoint: its values take over from that step
        on, as a resume in our own log does (the grouper's `purge`: the store gets a resume
        to the step before it). One at or past the step reached takes nothing over: a second
        value there is conflicting evidence."""
        name, self._resumed = self._resumed, ""
        top = self.grouper.top
        if step >= top:
            return
        why = (
            f"{name} resumes W&B run {self.run_id or '?'} at step {step}, below step {top} "
            f"of its attempt before: that attempt's values from step {step} on are taken over"
        )
        self.grouper.purge(step, when, why, out)
        self._top = step - 1
        self._back_top = -1

    def _step_back(self, where: int, step: int, when: float, out: list[Record]) -> None:
        """Take a row whose step key goes back below the step the run reached, in one file.

        The trainer resumed from a checkpoint into the same W&B run: its rows take over from
        that step on, as a later attempt's do (`_resume`): the store gets a resume to the step
        before it, and the abandoned segment's probes are kept as superseded."""
        top = self.grouper.top
        self._backs.append((step, top, where))
        self._back_top = max(self._back_top, top)
        why = (
            f"{self.step_key!r} goes back to step {step} after step {top} (byte {where}) in W&B "
            f"run {self.run_id or '?'}: the trainer resumed, its values from step {step} on are "
            "taken over"
        )
        self.grouper.purge(step, when, why, out)
        self._top = step - 1

    @property
    def notes(self) -> list[str]:
        """The step key going back, in words (never silent: base.py's decoder_notices)."""
        if not self._backs:
            return []
        shown = "; ".join(f"to step {a} after step {b} (byte {w})" for a, b, w in self._backs[:3])
        more = "; ..." if len(self._backs) > 3 else ""
        return [
            f"{self.back_rows} row(s) of {self.step_key!r} going back in steps ({shown}{more}): "
            "read as a resume, the later rows taking over from their first step"
        ]

    def feed(self, data: bytes) -> list[Record]:
        out: list[Record] = []
        for where, payload in self.framer.feed(data):
            self.records += 1
            try:
                rec = parse_record(payload)
            except (IndexError, ValueError, struct.error):
                self.note_bad(f"byte {where}", "a record that does not decode (not a W&B Record)")
                continue
            if rec.kind == "history":
                self._row(where, rec.items, rec.num, out)
            elif rec.kind == "run":
                self.run_id, self.project, self.name = rec.run
            elif rec.kind == "exit":
                self._exit(rec.code, out)
            elif rec.kind == "alert":
                self._alert(where, rec.alert, out)
        return out

    def _alert(self, where: int, said: tuple[str, str, str], out: list[Record]) -> None:
        """`run.alert(...)`: W&B's record names no step, so it is the last step read before it."""
        title, text, level = said
        try:
            out.append(make_alert(level or None, title, text, max(self._top, 0), self._time))
        except BadAlert as exc:
            self.note_bad(f"byte {where}", str(exc))

    def _row(self, where: int, items: tuple[Item, ...], num: int | None, out: list[Record]) -> None:
        step = self._row_step(where, items, num)
        if step is None:
            return
        when = NAN
        for key, value in items:
            if key == self.time_key and (x := number(value)) is not None:
                when = x
        if self._resumed:
            self._resume(step, when, out)
        elif step < self._top and self.step_key != "_step":
            self._step_back(where, step, when, out)
        if step < self._back_top:
            self.back_rows += 1
        for key, value in items:
            if not key.startswith("_") and key not in (self.step_key, self.time_key):
                self._value(step, when, key, value, out)
        self._top = max(self._top, step)
        if when == when:
            self._time = when

    def _row_step(self, where: int, items: tuple[Item, ...], num: int | None) -> int | None:
        """A history row's step: its step key's value (W&B's `_step`: else the row's own step).

        None, noted, where it has none, two, or one that is not a step."""
        given = [v for k, v in items if k == self.step_key]
        if not given and self.step_key == "_step" and num is not None:
            given = [num]
        if not given:
            self.note_bad(f"byte {where}", f"a history row without {self.step_key!r}")
            return None
        if len({repr(v) for v in given}) == 1:
            step = step_of(given[0])
        else:
            step = f"{self.step_key!r} written twice with two values"
        if isinstance(step, str):
            self.note_bad(f"byte {where}", f"{self.step_key}: {step}")
            return None
        return step

    def _value(self, step: int, when: float, key: str, value: object, out: list[Record]) -> None:
        """A history value into the grouper; one not a number is kept for a probe, else noted."""
        x = number(value)
        if x is not None:
            self.grouper.add(step, when, key, x, out)
            return
        shown = str(value) if isinstance(value, NotNumber) else repr(value)
        shown = shown if len(shown) <= SHOWN else shown[:SHOWN] + "..."
        if self.grouper.fields.is_eval(key):  # a probe value: kept, counted, unnamed
            self.grouper.add(step, when, key, shown, out)
        else:
            self.note_bad(f"step {step} {key}", f"value {shown} is not a number")

    def _exit(self, code: int, out: list[Record]) -> None:
        self.exit_code = code
        self.grouper.flush(out)
        out.append(
            Event(
                max(self._top, 0),
                self._time,
                "end" if code == 0 else "error",
                f"W&B exit code {code}",
            )
        )

    def finish(self) -> list[Record]:
        out: list[Record] = []
        self.framer.finish()
        self.grouper.flush(out)
        return out
