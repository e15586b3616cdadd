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
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from types import MappingProxyType
from typing import Protocol

from fontaine_tui.core.log.records import TRAIN_FIELDS, Probe, Record, TrainPoint

NAN = float("nan")
EVAL_PATTERNS = ("eval/*", "eval_*", "eval.*", "val/*", "val_*", "validation/*", "test/*",
                 "test_*")
# the train loss, by the names trainers give it (the first one present wins)
LOSS_NAMES = ("train/loss", "train_loss", "loss", "train/loss_step", "train_loss_step",
              "Loss/train", "loss/train")
TRAIN_ALIASES = {"lr": ("train/learning_rate", "learning_rate", "lr", "train/lr", "lr-Adam",
                        "lr-AdamW"),
                 "grad_norm": ("train/grad_norm", "grad_norm")}


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

    def is_eval(self, key: str) -> bool:
        return any(fnmatchcase(key, p) for p in self.eval)


class Grouper:
    """Scalars (step, time, key, value) in, records out: everything logged at one step is one
    train record and, if it has eval keys, one probe. A step's group is held until a later
    step shows up (or `finish()`), since its keys arrive one by one; a key logged at a step
    already emitted is counted in `late`, not applied (records only grow)."""

    def __init__(self, fields: FieldMap) -> None:
        self.fields = fields
        self._step: int | None = None
        self._time = NAN
        self._values: dict[str, float] = {}
        self._emitted = -1
        self._last_time: tuple[int, float] | None = None  # (step, time) of the last train record
        self.late = 0
        self.keys: dict[str, None] = {}  # every key seen, in order (for "no such tag")
        self._is_eval: dict[str, bool] = {}
        self._train_of: dict[str, str] | None = None
        self._train_sent = -1  # the held step whose train record went out early (settle_train)

    @property
    def emitted(self) -> int:
        """The last step whose group went out whole (-1: none)."""
        return self._emitted

    def add(self, step: int, time: float, key: str, value: float, out: list[Record]) -> None:
        if self._step is not None and step != self._step:
            if step < self._step:
                if step <= self._emitted:
                    self.late += 1
                    return
            self.flush(out)
        if step <= self._emitted:
            self.late += 1
            return
        if key not in self.keys:
            self.keys[key] = None
            self._train_of = None
        self._step = step
        if math.isfinite(time):
            self._time = time
        self._values[key] = value

    def add_row(self, step: int, time: float, row: Mapping[str, float], out: list[Record]
                ) -> None:
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
        """The held step's train record now (the writer flushed: a live chart need not wait
        for the next step); its eval values stay held for keys still to come at that step,
        until a later step or `flush`. A train key logged for it later is counted late."""
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
        step, values = self._step, self._values
        if step is None:
            return
        self._step, self._values = None, {}
        self._emitted = step
        if step == self._train_sent:  # its train record went out already
            train_of = self.train_map()
            late = [k for k in values if k in train_of]
            self.late += len(late)
            values = {k: v for k, v in values.items() if k not in train_of}
        if values:
            self._emit(step, values, out)

    def _emit(self, step: int, values: dict[str, float], out: list[Record]) -> None:
        is_eval = self._is_eval
        evals: dict[str, float] = {}
        for key, value in values.items():
            e = is_eval.get(key)
            if e is None:
                e = is_eval[key] = self.fields.is_eval(key)
            if e:
                evals[key] = value
        train = {dst: values[src] for src, dst in self.train_map().items() if src in values}
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
            out.append(TrainPoint(step, time, row["loss"], row["ar_ce"], row["flow_loss"],
                                  row["lr"], row["grad_norm"], row["step_s"], row["data_s"],
                                  row["samples"]))
        if evals:
            out.append(Probe(step, time, evals.get("eval_chunk_mae", NAN),
                             evals.get("train_chunk_mae", NAN), NAN, NAN,
                             MappingProxyType({}), None, fields=MappingProxyType(evals)))


def numbers(row: Mapping[str, object], skip: Sequence[str] = ()) -> dict[str, float]:
    """The numeric values of a row (a JSON object, a CSV row's parsed cells), by key."""
    out: dict[str, float] = {}
    for key, value in row.items():
        if key in skip or isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            out[key] = float(value)
    return out
