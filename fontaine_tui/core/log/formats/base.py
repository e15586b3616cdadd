"""What every format shares: the decoder interface, the field map, the step grouper.

A decoder turns a file's bytes into the log wing's records (`TrainPoint`, `Probe`), so the
store, the rules and the console read a run from another trainer as they read ours:

- `feed(data)`: for an appended file (`whole = False`: event files, JSONL), the bytes since
  the last call; for a file rewritten in place (`whole = True`: `trainer_state.json`,
  Lightning's `metrics.csv`, an MLflow store), the whole file each time it changed. Either
  way it returns only records it has not returned before.
- `finish()`: the file is done; whatever was held back (the last step's group).

A foreign run's numbers are keyed by its own names (`eval/chunk_mae`, `eval_loss`): an eval
probe's `fields` hold them, so a preset's `metric` names the source's key; a train record's
`loss` is the field map's train loss (its other fields NaN unless mapped).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from types import MappingProxyType
from typing import Protocol

from fontaine_tui.core.log.records import TRAIN_FIELDS, Event, Probe, Record, TrainPoint

NAN = float("nan")
EVAL_PATTERNS = ("eval/*", "eval_*", "eval.*", "val/*", "val_*", "validation/*", "test/*", "test_*")
# the train loss, by the names trainers give it (the first one present wins)
LOSS_NAMES = (
    "train/loss",
    "train_loss",
    "loss",
    "train/loss_step",
    "train_loss_step",
    "Loss/train",
    "loss/train",
)
TRAIN_ALIASES = {
    "lr": ("train/learning_rate", "learning_rate", "lr", "train/lr", "lr-Adam", "lr-AdamW"),
    "grad_norm": ("train/grad_norm", "grad_norm"),
}


class Decoder(Protocol):
    kind: str
    whole: bool  # True: each feed is the whole file (rewritten in place), not appended bytes

    def feed(self, data: bytes) -> list[Record]: ...

    def finish(self) -> list[Record]: ...


@dataclass(frozen=True, slots=True)
class FieldMap:
    """Which keys of a foreign log are an eval probe, and which are the train losses.

    `eval`: glob patterns (`eval/*`); a step with any such key is a probe, holding every one
    of them. `train`: the train record's fields by source key (`loss = "train/loss"`);
    unmapped, the loss is the first of LOSS_NAMES present. `step` and `time`: the fields that
    hold them in row formats (JSONL, CSV)."""

    eval: tuple[str, ...] = EVAL_PATTERNS
    train: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    step: str = "step"
    time: str = ""
    # JSONL: the lines whose field `probe_field` holds `probe_value` are the probes (every
    # number on them is an eval key, under its own name); the other lines are train lines
    probe_field: str = ""
    probe_value: str = ""

    def is_eval(self, key: str) -> bool:
        return any(fnmatchcase(key, p) for p in self.eval)


def same(a: float, b: float) -> bool:
    """One value logged twice (NaN is NaN; -0.0 is not 0.0)."""
    return repr(a) == repr(b)


class Grouper:
    """Scalars (step, time, key, value) in, records out.

    Everything logged at one step is one train record and, if it has eval keys, one probe. A
    step's group is held until a later step shows up (or `finish()`), since its keys arrive one
    by one. A key logged at a step already emitted is counted in `late`, not applied (records
    only grow).

    A key logged twice for one step with two different values is conflicting evidence: an
    eval key makes a second probe for the step with the other value (the store reports the
    pair as a conflict, and a verdict reading that step is UNDECIDABLE), also when the second
    value comes after the step went out; a train key keeps its first value and is counted in
    `conflicts` (described in `conflict_notes`)."""

    def __init__(self, fields: FieldMap, train: bool = True) -> None:
        self.fields = fields
        self.with_train = train  # False: probes only (a JSONL log's probe lines)
        self._step: int | None = None
        self._time = NAN
        self._values: dict[str, float] = {}
        self._others: dict[str, list[float]] = {}  # the held step's second values, by key
        self._sent: dict[int, tuple[float, dict[str, float]]] = {}  # probes out: step -> evals
        self._emitted = -1
        self._last_time: tuple[int, float] | None = None  # (step, time) of the last train record
        self.late = 0
        self.conflicts = 0
        self.conflict_notes: list[str] = []
        self.bits: dict[str, int] = {}  # keys stored in fewer significand bits than a double
        self.keys: dict[str, None] = {}  # every key seen, in order (for "no such tag")
        self._is_eval: dict[str, bool] = {}
        self._train_of: dict[str, str] | None = None
        self._train_sent = -1  # the held step whose train record went out early (settle_train)

    @property
    def top(self) -> int:
        """The highest step held or gone out (-1: none)."""
        return max(self._emitted, self._step if self._step is not None else -1)

    @property
    def emitted(self) -> int:
        """The last step whose group went out whole (-1: none)."""
        return self._emitted

    def add(self, step: int, time: float, key: str, value: float, out: list[Record]) -> None:
        if self._step is not None and step != self._step:
            if step < self._step:
                if step <= self._emitted:
                    self._late(step, key, value, out)
                    return
            self.flush(out)
        if step <= self._emitted:
            self._late(step, key, value, out)
            return
        if key not in self.keys:
            self.keys[key] = None
            self._train_of = None
        self._step = step
        if math.isfinite(time):
            self._time = time
        values = self._values
        if key not in values:
            values[key] = value
        elif not same(values[key], value):
            self._others.setdefault(key, []).append(value)

    def _late(self, step: int, key: str, value: float, out: list[Record]) -> None:
        """Take a value for a step already out.

        The same value again changes nothing. Another value of an eval key the step's probe
        holds is a conflicting probe. A new eval key for the last step out completes it (the
        step went out on a quiet moment, before the writer logged the rest): its probe goes
        out again with the key added, which the store takes in place of the first
        (core/log/store.py). Anything else is late."""
        sent = self._sent.get(step)
        if sent is not None and key in sent[1]:
            if not same(sent[1][key], value):
                self._probe(step, sent[0], {**sent[1], key: value}, out)
            return
        if step == self._emitted and self._step is None and self._eval(key):
            if key not in self.keys:
                self.keys[key] = None
            time, evals = sent if sent is not None else (self._time, {})
            evals = {**evals, key: value}
            self._sent[step] = (time, evals)
            self._probe(step, time, evals, out)
            return
        self.late += 1

    def _eval(self, key: str) -> bool:
        e = self._is_eval.get(key)
        if e is None:
            e = self._is_eval[key] = self.fields.is_eval(key)
        return e

    def purge(self, step: int, time: float, why: str, out: list[Record]) -> None:
        """Take a restart at `step` that drops what was logged from `step` on.

        This is TensorBoard's SessionLog START. The store gets a resume to the step before
        it (and keeps the dropped probes as superseded). Values from `step` on are taken
        anew."""
        held = self._step
        if held is not None and held < step:
            self.flush(out)
        top = max(self._emitted, held if held is not None else -1)
        self._step, self._values, self._others = None, {}, {}
        if step > top:
            return  # nothing logged at or after it: nothing to drop
        self._emitted = step - 1
        self._train_sent = -1
        self._sent = {s: v for s, v in self._sent.items() if s < step}
        if self._last_time is not None and self._last_time[0] >= step:
            self._last_time = None
        out.append(Event(step - 1, time, "resume", why))

    def _conflict(self, step: int, key: str, first: float, second: float) -> None:
        self.conflicts += 1
        if len(self.conflict_notes) < 20:
            self.conflict_notes.append(f"{key} at step {step}: {first!r} and {second!r}")

    def add_row(self, step: int, time: float, row: Mapping[str, float], out: list[Record]) -> None:
        for key, value in row.items():
            self.add(step, time, key, value, out)

    def train_map(self) -> dict[str, str]:
        """Source key -> train field, from the field map or the first known name present."""
        if self._train_of is None:
            explicit = dict(self.fields.train)
            out = {src: dst for dst, src in explicit.items()}
            if "loss" not in explicit:
                for name in LOSS_NAMES:
                    if name in self.keys:
                        out[name] = "loss"
                        break
            for dst, names in TRAIN_ALIASES.items():
                if dst not in explicit:
                    for name in names:
                        if name in self.keys:
                            out[name] = dst
                            break
            self._train_of = out
        return self._train_of

    def settle_train(self, out: list[Record]) -> None:
        """Send the held step's train record out now, the writer having flushed.

        A live chart need not wait for the next step. Its eval values stay held for keys
        still to come at that step, until a later step or `flush`. A train key logged for it
        later is counted late."""
        step, values = self._step, self._values
        if step is None or step == self._train_sent:
            return
        train_of = self.train_map()
        train = {k: v for k, v in values.items() if k in train_of}
        if not train:
            return
        self._values = {k: v for k, v in values.items() if k not in train_of}
        self._emit(step, train, out)
        self._train_sent = step

    def flush(self, out: list[Record]) -> None:
        step, values, others = self._step, self._values, self._others
        if step is None:
            return
        self._step, self._values, self._others = None, {}, {}
        self._emitted = step
        firsts = values
        if step == self._train_sent:  # its train record went out already
            train_of = self.train_map()
            late = [k for k in values if k in train_of]
            self.late += len(late)
            values = {k: v for k, v in values.items() if k not in train_of}
        if values:
            self._emit(step, values, out)
        sent = self._sent.get(step)
        for key, seconds in others.items():
            for value in seconds:
                if sent is not None and key in sent[1]:
                    self._probe(step, sent[0], {**sent[1], key: value}, out)
                else:
                    self._conflict(step, key, firsts.get(key, NAN), value)

    def _emit(self, step: int, values: dict[str, float], out: list[Record]) -> None:
        is_eval = self._is_eval
        evals: dict[str, float] = {}
        for key, value in values.items():
            e = is_eval.get(key)
            if e is None:
                e = is_eval[key] = self.fields.is_eval(key)
            if e:
                evals[key] = value
        train = (
            {dst: values[src] for src, dst in self.train_map().items() if src in values}
            if self.with_train
            else {}
        )
        time = self._time
        if train:
            step_s = NAN
            if self._last_time is not None and math.isfinite(time) and step > self._last_time[0]:
                step_s = (time - self._last_time[1]) / (step - self._last_time[0])
            if math.isfinite(time):
                self._last_time = (step, time)
            row = {name: train.get(name, NAN) for name in TRAIN_FIELDS}
            if not math.isfinite(row["step_s"]):
                row["step_s"] = step_s
            out.append(
                TrainPoint(
                    step,
                    time,
                    row["loss"],
                    row["ar_ce"],
                    row["flow_loss"],
                    row["lr"],
                    row["grad_norm"],
                    row["step_s"],
                    row["data_s"],
                    row["samples"],
                )
            )
        if evals:
            self._sent[step] = (time, evals)
            self._probe(step, time, evals, out)

    def _probe(self, step: int, time: float, evals: dict[str, float], out: list[Record]) -> None:
        out.append(foreign_probe(step, time, evals, self.bits))


_NO_BITS: Mapping[str, int] = MappingProxyType({})


def foreign_probe(
    step: int, time: float, evals: dict[str, float], bits: Mapping[str, int]
) -> Probe:
    """A probe of another trainer's log.

    Its eval keys are its fields (`evals` is the probe's own: it is not copied). `bits` holds
    the significand bits of the source's narrow keys, shared by the probes of one read (a key's
    entry only ever narrows)."""
    return Probe(
        step,
        time,
        evals.get("eval_chunk_mae", NAN),
        evals.get("train_chunk_mae", NAN),
        NAN,
        NAN,
        _NO_FIELDS,
        None,
        fields=MappingProxyType(evals),
        bits=MappingProxyType(bits) if bits else _NO_BITS,
    )


_NO_FIELDS: Mapping[str, float] = MappingProxyType({})


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


Row = tuple[int, float, Mapping[str, float]]  # (step, time, values by key)


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

    `backwards` counts the rows of the latest read whose step goes back in the file's own
    order; `bad` lists rows that could not be read (where, why), `bad_count` counts them."""

    whole = True

    def __init__(self, fields: FieldMap | None = None) -> None:
        super().__init__()
        self.fields = fields or FieldMap()
        self.grouper = Grouper(self.fields)
        self._out: dict[tuple[str, int], set[str]] = {}
        self.backwards = 0

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
        grouper = Grouper(self.fields)
        out: list[Record] = []
        for step, time, row in sorted((r for rows in readings for r in rows), key=lambda r: r[0]):
            grouper.add_row(step, time, row, out)
        self.grouper = grouper
        return self._new(out)

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
    """What step groupers did not apply as logged, in words."""
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


def keys_seen(dec: Decoder) -> list[str]:
    """Every key a decoder's groupers saw, in the order first seen."""
    seen: dict[str, None] = {}
    for g in groupers(dec):
        seen.update(g.keys)
    return list(seen)
