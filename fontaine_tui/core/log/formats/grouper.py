"""Steps into records: the field map and the step grouper every format shares.

A foreign run's numbers are keyed by its own names (`eval/chunk_mae`, `eval_loss`). The field
map (`FieldMap`) says which keys are an eval probe and which are train fields; the `Grouper`
takes a format's scalars (step, time, key, value) and makes everything logged at one step one
train record and, if it has eval keys, one probe, counting what it cannot apply (`late`,
`conflicts`) and the eval values that are not numbers (`not_numbers`: a JSONL boolean or
string, kept with what it is, as the probe's own `not_numbers`; `odd_values` names the first,
for the evidence gate to say). An eval probe's `fields` hold
the source's keys, so a preset's `metric` names the source's key; a train record's `loss` is
the field map's train loss (its other fields NaN unless mapped), and every key of the step
that is not an eval key is also its `extra`, under the source's own name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from types import MappingProxyType
from typing import cast

from fontaine_tui.core.log.oddvalues import KEPT as ODD_KEPT
from fontaine_tui.core.log.oddvalues import OddValues
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


# a value a step logged: a number, or why it is not one (records.not_a_metric's words)
Value = float | str


def same(a: Value, b: Value) -> bool:
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
        self._values: dict[str, Value] = {}
        self._others: dict[str, list[Value]] = {}  # the held step's second values, by key
        self._sent: dict[int, tuple[float, dict[str, Value]]] = {}  # probes out: step -> evals
        self._emitted = -1
        self._last_time: tuple[int, float] | None = None  # (step, time) of the last train record
        self.late = 0
        self.conflicts = 0
        self.conflict_notes: list[str] = []
        self.not_numbers = 0  # eval values that are not numbers (kept as what they are)
        self.not_number_notes: list[tuple[str, int, str]] = []  # the first: key, step, what
        self.bits: dict[str, int] = {}  # keys stored in fewer significand bits than a double
        self.keys: dict[str, None] = {}  # every key seen, in order (for "no such tag")
        self._is_eval: dict[str, bool] = {}
        self._train_of: dict[str, str] | None = None
        self._train_sent = -1  # the held step whose train record went out early (settle_train)

    @property
    def odd_values(self) -> OddValues:
        """The eval values that were not numbers (said by the evidence gate, not in notices)."""
        return OddValues(self.not_numbers, tuple(self.not_number_notes))

    @property
    def top(self) -> int:
        """The highest step held or gone out (-1: none)."""
        return max(self._emitted, self._step if self._step is not None else -1)

    def add(self, step: int, time: float, key: str, value: Value, out: list[Record]) -> None:
        """Take `key`'s `value` at `step`: a number, or why it is not one.

        A value that is not a number is kept for an eval key only (its probe says what it
        is), and counted; a train key's is not held (a train record's fields are numbers)."""
        if isinstance(value, str) and not self._keep_not_number(step, key, value):
            return
        if self._step is not None and step != self._step:
            if step < self._step and step <= self._emitted:
                self._late(step, key, value, out)
                return
            self.flush(out)
        if step <= self._emitted:
            self._late(step, key, value, out)
            return
        self._hold(step, time, key, value)

    def _keep_not_number(self, step: int, key: str, value: str) -> bool:
        """Count an eval key's value that is not a number, to be held (True).

        A train key's is not held (False): a train record's fields are numbers."""
        if not self._eval(key):
            return False
        self.not_numbers += 1
        if len(self.not_number_notes) < ODD_KEPT:
            self.not_number_notes.append((key, step, value))
        return True

    def _hold(self, step: int, time: float, key: str, value: Value) -> None:
        """Hold `key`'s value with the step's group; a second, other value is held apart."""
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

    def _late(self, step: int, key: str, value: Value, out: list[Record]) -> None:
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

    def _conflict(self, step: int, key: str, first: Value, second: Value) -> None:
        self.conflicts += 1
        if len(self.conflict_notes) < 20:
            self.conflict_notes.append(f"{key} at step {step}: {first!r} and {second!r}")

    def add_row(self, step: int, time: float, row: Mapping[str, Value], out: list[Record]) -> None:
        for key, value in row.items():
            self.add(step, time, key, value, out)

    def train_map(self) -> dict[str, str]:
        """Source key -> train field, from the field map or the first known name present."""
        if self._train_of is None:
            explicit = dict(self.fields.train)
            out = {src: dst for dst, src in explicit.items()}
            for dst, names in (("loss", LOSS_NAMES), *TRAIN_ALIASES.items()):
                found = next((name for name in names if name in self.keys), None)
                if dst not in explicit and found is not None:
                    out[found] = dst
            self._train_of = out
        return self._train_of

    def settle_train(self, out: list[Record]) -> None:
        """Send the held step's train record out now, the writer having flushed.

        A live chart need not wait for the next step. The step's other keys held so far go
        with it as its `extra`. Its eval values stay held for keys
        still to come at that step, until a later step or `flush`. A train key logged for it
        later is counted late."""
        step, values = self._step, self._values
        if step is None or step == self._train_sent:
            return
        train_of = self.train_map()
        if not any(k in train_of for k in values):
            return
        train = {k: v for k, v in values.items() if not self._eval(k)}
        self._values = {k: v for k, v in values.items() if self._eval(k)}
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
        self._second_values(step, firsts, others, out)

    def _second_values(
        self, step: int, firsts: dict[str, Value], others: dict[str, list[Value]], out: list[Record]
    ) -> None:
        """The step's second values, once it is out.

        Each is another probe where the step's probe holds the key (conflicting evidence),
        else a train key's conflict, counted."""
        sent = self._sent.get(step)
        for key, seconds in others.items():
            for value in seconds:
                if sent is not None and key in sent[1]:
                    self._probe(step, sent[0], {**sent[1], key: value}, out)
                else:
                    self._conflict(step, key, firsts.get(key, NAN), value)

    def _emit(self, step: int, values: dict[str, Value], out: list[Record]) -> None:
        """A step's values out: its train record and its probe, where it has such keys."""
        evals = {key: value for key, value in values.items() if self._eval(key)}
        train = (
            {
                dst: v
                for src, dst in self.train_map().items()
                if src in values and not isinstance(v := values[src], str)
            }
            if self.with_train
            else {}
        )
        time = self._time
        if train:
            out.append(self._train_point(step, time, train, values))
        if evals:
            self._sent[step] = (time, evals)
            self._probe(step, time, evals, out)

    def _train_point(
        self, step: int, time: float, train: dict[str, float], values: dict[str, Value]
    ) -> TrainPoint:
        """The step's train record.

        It holds its train fields, every other number as its `extra`, and its seconds per step
        since the last one (unless a field gives them)."""
        step_s = self._seconds_per_step(step, time)
        row = {name: train.get(name, NAN) for name in TRAIN_FIELDS}
        extra = {k: v for k, v in values.items() if not self._is_eval[k] and not isinstance(v, str)}
        if not math.isfinite(row["step_s"]):
            row["step_s"] = step_s
        return TrainPoint(
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
            MappingProxyType(extra),
        )

    def _seconds_per_step(self, step: int, time: float) -> float:
        """Seconds a step since the last train record with another time (NaN: none).

        A writer that stamps a batch of steps with one time (trackio) times none of them
        alone: a step sharing the last time is not measured, and the next time read spans
        every step since. This one's time, where it has one that moved, becomes the last."""
        step_s = NAN
        last = self._last_time
        if last is not None and math.isfinite(time) and time == last[1]:
            return step_s
        if last is not None and math.isfinite(time) and step > last[0]:
            step_s = (time - last[1]) / (step - last[0])
        if math.isfinite(time):
            self._last_time = (step, time)
        return step_s

    def _probe(self, step: int, time: float, evals: dict[str, Value], out: list[Record]) -> None:
        out.append(foreign_probe(step, time, evals, self.bits))


_NO_BITS: Mapping[str, int] = MappingProxyType({})


def foreign_probe(
    step: int, time: float, evals: Mapping[str, Value], bits: Mapping[str, int]
) -> Probe:
    """A probe of another trainer's log.

    Its eval keys are its fields (`evals` is the probe's own: it is not copied), those whose
    value is not a number its `not_numbers` (with what they are). `bits` holds the significand
    bits of the source's narrow keys, shared by the probes of one read (a key's entry only ever
    narrows)."""
    odd = tuple((k, v) for k, v in evals.items() if isinstance(v, str))
    fields: Mapping[str, float] = (
        {k: v for k, v in evals.items() if not isinstance(v, str)}
        if odd
        else cast(Mapping[str, float], evals)
    )
    return Probe(
        step,
        time,
        fields.get("eval_chunk_mae", NAN),
        fields.get("train_chunk_mae", NAN),
        NAN,
        NAN,
        _NO_FIELDS,
        None,
        not_numbers=odd,
        fields=MappingProxyType(fields),
        bits=MappingProxyType(bits) if bits else _NO_BITS,
    )


_NO_FIELDS: Mapping[str, float] = MappingProxyType({})
