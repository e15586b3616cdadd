"""Log schema v1: parse `train_log.jsonl` lines into typed records.

The records are read into the store by read.py."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from fontaine_tui.core.log import jsontext

SCHEMA = 1
TRAIN_FIELDS = ("loss", "ar_ce", "flow_loss", "lr", "grad_norm", "step_s", "data_s", "samples")
MALFORMED_KEPT = 1000  # line numbers kept for display; the count is exact beyond that
NAN = float("nan")


@dataclass(frozen=True, slots=True)
class Malformed:
    line: int
    reason: str
    text: str


@dataclass(frozen=True, slots=True)
class Meta:
    step: int
    time: float
    schema: int | None
    run: str
    world_size: int | None
    device: str
    recipe: Mapping[str, object]
    argv: tuple[str, ...]
    host: str
    line: int = 0
    code: Mapping[str, object] = field(default_factory=lambda: _NO_MAP)  # engine code identity
    data: Mapping[str, object] = field(default_factory=lambda: _NO_MAP)  # corpus identity
    versions: Mapping[str, object] = field(default_factory=lambda: _NO_MAP)


_NO_MAP: Mapping[str, object] = MappingProxyType({})
_NO_BITS: Mapping[str, int] = MappingProxyType({})
DOUBLE_BITS = 53


@dataclass(frozen=True, slots=True)
class TrainPoint:
    step: int
    time: float
    loss: float
    ar_ce: float
    flow_loss: float
    lr: float
    grad_norm: float
    step_s: float
    data_s: float
    samples: float
    # every other number the record logged, by its dotted path (NaN and infinities as logged)
    extra: Mapping[str, float] = field(default_factory=lambda: _NO_FIELDS)
    # the names of the numbers past EXTRA_KEPT, not held (counted by the store as not kept)
    extra_cut: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Probe:
    step: int
    time: float
    eval_chunk_mae: float
    train_chunk_mae: float
    eval_ar_ce: float
    eval_flow_loss: float
    breakdown: Mapping[str, float]
    n_frames: int | None
    line: int = 0
    # the fields whose logged value is not a finite real number, and what it was
    not_numbers: tuple[tuple[str, str], ...] = ()
    # every number in the record by its path ("eval_chunk_mae", "breakdown.rig"), so a preset
    # may read any of them; NaN and infinities included
    fields: Mapping[str, float] = field(default_factory=lambda: _NO_FIELDS)
    # the significand bits a source stored a field in, where fewer than a double's 53
    # (TensorBoard's float32 scalars: 24): the read compares at that precision
    bits: Mapping[str, int] = field(default_factory=lambda: _NO_BITS)

    def precision(self, metric: str) -> int:
        """The significand bits `metric` was stored with (53: a double)."""
        return self.bits.get(metric, DOUBLE_BITS)

    def value(self, metric: str) -> float:
        """The logged number at `metric` (a field name or a dotted path).

        It is NaN when absent or not a number (`why_not` says which)."""
        return self.fields.get(metric, NAN)

    def has(self, name: str) -> bool:
        """Whether the record logged `name` at all (a number, NaN or a non-number).

        The engine's own fields are absent from another trainer's probes."""
        return name in self.fields or any(k == name for k, _ in self.not_numbers)

    def why_not(self, metric: str) -> str:
        """Why `value(metric)` is not a finite number ("" when it is one)."""
        why = dict(self.not_numbers).get(metric)
        if why is not None:
            return why
        if metric in self.fields:
            return "" if math.isfinite(self.fields[metric]) else repr(self.fields[metric])
        return "null" if metric in METRIC_FIELDS else "absent (no such field in the record)"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    step: int
    time: float
    path: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class Event:
    step: int
    time: float
    event: str
    detail: str
    line: int = 0


# the words a trainer may use for a level: W&B's and trackio's INFO, WARN, ERROR among them
LEVEL_WORDS = {
    "info": "info",
    "warn": "warn",
    "warning": "warn",
    "alert": "alert",
    "error": "alert",
    "critical": "alert",
}
TITLE_MAX = 200  # characters of an alert's title kept; more is cut, with a mark
TEXT_MAX = 2000  # characters of an alert's text kept; more is cut, with a mark
ALERT_REFUSED = 1 << 16  # a title or text longer than this is no alert: not read
NO_STEP = -1  # an alert that names no step


@dataclass(frozen=True, slots=True)
class Alert:
    """An alert the trainer raised itself (`{"kind": "alert", ...}`, trackio's or W&B's alert).

    It is health, never evidence: no rule reads it, so it never changes a verdict. `step` is
    NO_STEP when the record names none."""

    step: int
    time: float
    level: str  # "info", "warn" or "alert"
    title: str
    text: str
    line: int = 0


class BadAlert(ValueError):
    """An alert record that cannot be relayed (counted apart from the evidence's lines)."""


def _cut(value: str, most: int) -> str:
    if len(value) <= most:
        return value
    return f"{value[:most]}... ({len(value) - most} characters cut)"


def make_alert(
    level: object, title: object, text: object, step: int, time: float, line: int = 0
) -> Alert:
    """An alert from what a trainer wrote; BadAlert says what is wrong with it.

    The level is a word of LEVEL_WORDS (any case; none: "warn"); the title a non-empty
    string; the text a string or none. A long title or text is cut, one past ALERT_REFUSED
    characters refused."""
    word = _level_word("warn" if level is None else level)
    if not isinstance(title, str) or not title.strip():
        raise BadAlert(f"alert 'title' is {_shown(title)}: expected a non-empty string")
    if text is not None and not isinstance(text, str):
        raise BadAlert(f"alert 'text' is {_shown(text)}: expected a string")
    text = text or ""
    for name, value in (("title", title), ("text", text)):
        if len(value) > ALERT_REFUSED:
            raise BadAlert(
                f"alert {name!r} is {len(value)} characters: at most {ALERT_REFUSED} are read"
            )
    return Alert(
        step,
        time,
        word,
        _cut(title, TITLE_MAX),
        _cut(text, TEXT_MAX),
        line,
    )


def _level_word(level: object) -> str:
    """An alert's level as the console says it (LEVEL_WORDS); BadAlert where it is none."""
    if not isinstance(level, str) or level.lower() not in LEVEL_WORDS:
        raise BadAlert(
            f"alert 'level' is {_shown(level)}: expected one of info, warn, alert "
            "(or warning, error, critical)"
        )
    return LEVEL_WORDS[level.lower()]


def _shown(value: object) -> str:
    if value is None:
        return "missing"
    if isinstance(value, str):
        return repr(value[:20]) + ("..." if len(value) > 20 else "")
    return f"a JSON {type(value).__name__.replace('dict', 'object').replace('list', 'array')}"


def _alert(obj: dict, line: int) -> Alert:
    step = NO_STEP
    if obj.get("step") is not None:
        try:
            step = _step(obj["step"])
        except ValueError as exc:
            raise BadAlert(f"alert {exc}") from None
    return make_alert(
        obj.get("level"), obj.get("title"), obj.get("text"), step, _num(obj.get("time")), line
    )


Record = Meta | TrainPoint | Probe | Checkpoint | Event | Alert


def _num(value: object) -> float:
    """A JSON number (or NaN/Infinity) as float; anything else is NaN.

    A boolean is not a number (`true` is not 1.0), nor is an integer beyond the float range."""
    if isinstance(value, bool):
        return NAN
    if isinstance(value, float):
        return value
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return NAN
    return NAN


def not_a_metric(value: object) -> str | None:
    """Why a logged metric value is not a finite real number, or None if it is one.

    Every reader keeps a non-number with these words (our log's eval records, another
    trainer's JSONL), so a verdict reading it says what was logged."""
    if isinstance(value, bool):
        return f"{'true' if value else 'false'} (a boolean)"
    if isinstance(value, float):
        return None if math.isfinite(value) else repr(value)
    if isinstance(value, int):
        return (
            None if math.isfinite(_num(value)) else f"an integer of {len(str(abs(value)))} digits"
        )
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"a string ({value[:20]!r})"
    return f"a JSON {type(value).__name__.replace('dict', 'object').replace('list', 'array')}"


_NO_FIELDS: Mapping[str, float] = MappingProxyType({})
FIELDS_KEPT = 256  # numbers kept per eval record (a runaway record is not held whole)


def _flatten(
    obj: Mapping[str, object],
    numbers: dict[str, float],
    not_numbers: list[tuple[str, str]],
    prefix: str = "",
    depth: int = 0,
) -> None:
    """Every leaf of an eval record by its dotted path.

    Numbers go into `numbers`. Anything else (a boolean, a string, null, an array) goes into
    `not_numbers` with what it is."""
    for key, value in obj.items():
        if len(numbers) + len(not_numbers) >= FIELDS_KEPT:
            return
        path = f"{prefix}{key}"
        if isinstance(value, dict) and depth < 8:
            _flatten(value, numbers, not_numbers, path + ".", depth + 1)
            continue
        _leaf(path, value, numbers, not_numbers)


def _leaf(
    path: str, value: object, numbers: dict[str, float], not_numbers: list[tuple[str, str]]
) -> None:
    """One leaf of an eval record, by its dotted `path`.

    A number (a float NaN or infinity too) goes into `numbers`, and what it is into
    `not_numbers` where it is not a finite one."""
    why = not_a_metric(value)
    if path in numbers and repr(numbers[path]) != repr(_num(value)):
        raise ValueError(f"{path!r} written twice (nested and dotted) with two values")
    if why is None or isinstance(value, float):
        numbers[path] = _num(value)
    if why is not None:
        not_numbers.append((path, why))


TRAIN_KEYS = frozenset(("kind", "step", "time", *TRAIN_FIELDS))  # a train record's columns
# a train record's other numbers kept: as many as the store keeps keys (core/log/extras.py)
EXTRA_KEPT = 4096
# names of a record's numbers past EXTRA_KEPT handed on to be counted as keys not kept; a
# record with more says "at least" that many
CUT_NAMED = 65536


def extra_numbers(obj: Mapping[str, object], cut: list[str] | None = None) -> dict[str, float]:
    """The numbers of a train record beyond its columns, by dotted path.

    A value that is not a number (a string, a boolean, null) is left out; NaN and the
    infinities are kept as logged. A key written both nested and dotted keeps its first value:
    a train record's extra keys never make its line unreadable. Past EXTRA_KEPT numbers, the
    names of the rest (up to CUT_NAMED) go into `cut`, so the keys not kept can be counted."""
    out: dict[str, float] = {}
    if len(obj) > len(TRAIN_KEYS) or any(k not in TRAIN_KEYS for k in obj):
        rest = {k: v for k, v in obj.items() if k not in TRAIN_KEYS}
        _numbers(rest, out, "", 0, [] if cut is None else cut)
    return out


def train_point(
    step: int,
    time: float,
    values: Sequence[float],
    extra: Mapping[str, float] = _NO_FIELDS,
    cut: tuple[str, ...] = (),
) -> TrainPoint:
    """A train record from its columns' values, in TRAIN_FIELDS order."""
    loss, ar_ce, flow_loss, lr, grad_norm, step_s, data_s, samples = values
    return TrainPoint(
        step, time, loss, ar_ce, flow_loss, lr, grad_norm, step_s, data_s, samples, extra, cut
    )


def _frozen(numbers: dict[str, float]) -> Mapping[str, float]:
    return MappingProxyType(numbers) if numbers else _NO_FIELDS


def _numbers(
    obj: Mapping[str, object], out: dict[str, float], prefix: str, depth: int, cut: list[str]
) -> None:
    # by exact type: JSON decoders give exact floats, ints, bools and dicts (a bool is no number)
    for key, value in obj.items():
        if len(out) >= EXTRA_KEPT and len(cut) >= CUT_NAMED:
            return
        if type(value) is float or type(value) is int:
            _keep_number(prefix + key, value, out, cut)
        elif type(value) is dict and depth < 8:
            _numbers(value, out, f"{prefix}{key}.", depth + 1, cut)


def _keep_number(name: str, value: float, out: dict[str, float], cut: list[str]) -> None:
    """A train record's other number into `out`, or its name into `cut` once `out` is full."""
    if name in out:
        return  # written both nested and dotted: its first value
    try:
        number = float(value)
    except OverflowError:  # beyond the float range: not a number
        return
    if len(out) < EXTRA_KEPT:
        out[name] = number
    else:
        cut.append(name)


STEP_MAX = (1 << 63) - 1
METRIC_FIELDS = ("eval_chunk_mae", "train_chunk_mae", "eval_ar_ce", "eval_flow_loss")
_NOT_METRICS = ("kind", "step", "time")  # the record's frame, never a metric


def _step(value: object) -> int:
    """The record's step, or ValueError saying what is wrong with it."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            raise ValueError(
                f"'step' is {value!r}, a float: expected a non-negative integer "
                f"(write {int(value)})"
            )
        raise ValueError("'step' is not a non-negative integer")
    if value < 0:
        raise ValueError(f"'step' is {value}: expected a non-negative integer")
    if value > STEP_MAX:
        raise ValueError("'step' is beyond 2**63 - 1")
    return value


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def decode_line(raw: bytes) -> dict:
    """One JSON object from one line; raises ValueError with a short reason."""
    obj = jsontext.loads(raw)
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    return obj


def _snippet(raw: bytes) -> str:
    return raw[:120].decode("utf-8", "replace")


def to_record(obj: dict, line: int = 0) -> Record | None:
    """A decoded object as a typed record, or None for an unknown kind.

    Raises ValueError if the object is invalid (BadAlert for an alert record)."""
    kind = obj.get("kind")
    if not isinstance(kind, str):
        raise ValueError("missing 'kind'")
    if kind == "alert":  # its step is optional
        return _alert(obj, line)
    if "step" not in obj:
        raise ValueError("missing 'step'")
    step = _step(obj["step"])
    t = _num(obj.get("time"))
    read = _READERS.get(kind)
    return read(obj, step, t, line) if read is not None else None


def _train_record(obj: dict, step: int, t: float, line: int) -> TrainPoint:
    cut: list[str] = []
    extra = extra_numbers(obj, cut)
    return train_point(
        step, t, [_num(obj.get(n)) for n in TRAIN_FIELDS], _frozen(extra), tuple(cut)
    )


def _probe_record(obj: dict, step: int, t: float, line: int) -> Probe:
    raw = obj.get("breakdown")
    breakdown = {str(k): _num(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
    numbers: dict[str, float] = {}
    odd: list[tuple[str, str]] = []
    _flatten({k: v for k, v in obj.items() if k not in _NOT_METRICS}, numbers, odd)
    return Probe(
        step,
        t,
        _num(obj.get("eval_chunk_mae")),
        _num(obj.get("train_chunk_mae")),
        _num(obj.get("eval_ar_ce")),
        _num(obj.get("eval_flow_loss")),
        MappingProxyType(breakdown),
        _int_or_none(obj.get("n_frames")),
        line,
        tuple(odd),
        MappingProxyType(numbers),
    )


def _event_record(obj: dict, step: int, t: float, line: int) -> Event:
    return Event(step, t, _text(obj.get("event")), _text(obj.get("detail")), line)


def _checkpoint_record(obj: dict, step: int, t: float, line: int) -> Checkpoint:
    return Checkpoint(step, t, _text(obj.get("path")), line)


def _meta_record(obj: dict, step: int, t: float, line: int) -> Meta:
    recipe = obj.get("recipe")
    argv = obj.get("argv")
    return Meta(
        step,
        t,
        _int_or_none(obj.get("schema")),
        _text(obj.get("run")),
        _int_or_none(obj.get("world_size")),
        _text(obj.get("device")),
        MappingProxyType(dict(recipe) if isinstance(recipe, dict) else {}),
        tuple(str(a) for a in argv) if isinstance(argv, list) else (),
        _text(obj.get("host")),
        line,
        *(
            MappingProxyType(dict(v)) if isinstance(v := obj.get(k), dict) else _NO_MAP
            for k in ("code", "data", "versions")
        ),
    )


# each kind's reader (an alert is read apart: its step is optional)
_READERS: dict[str, Callable[[dict, int, float, int], Record]] = {
    "train": _train_record,
    "eval": _probe_record,
    "event": _event_record,
    "checkpoint": _checkpoint_record,
    "meta": _meta_record,
}


def parse_line(raw: bytes, line: int = 0) -> Record | None:
    """Parse one complete line (without its newline). Raises ValueError if malformed."""
    return to_record(decode_line(raw.rstrip(b"\r")), line)
