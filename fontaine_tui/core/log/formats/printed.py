"""Printed lines: a trainer that prints its metrics and logs them nowhere else.

LeRobot's `lerobot-train`, for one, prints
`step:10K smpl:320K ep:1K epch:0.50 loss:0.123 grdn:1.234 lr:1.0e-05 ...`. A preset's [source]
`patterns` are regular expressions with named groups: a `step` group (required), an optional `time`
group (epoch seconds, or an ISO date and time such as `2025-01-02 10:00:00`, local time), and every
other named group a numeric field named by the group.

A line that matches no pattern is not a metrics line (printed output holds much else) and is passed
over. A matched line whose step or train field is not a number is counted among the unreadable
entries and reported. An eval field that is not a number is kept as what it is (the probe's
`not_numbers`, counted in the grouper's `odd_values`): which key, step and value it was is a
probe's value, said through the evidence gate (core/log/oddvalues.py), never in a notice.
Numbers may carry LeRobot's decimal suffixes (K, M, B, T, Q: thousands, millions, ...). A step
printed with one is rounded where it was printed (`10K` is any step from 9500 to 10500), which is
reported once."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.limits import PatternError, UserPattern
from fontaine_tui.core.log.formats.base import Unread, step_of
from fontaine_tui.core.log.formats.grouper import FieldMap, Grouper
from fontaine_tui.core.log.lines import LineCutter
from fontaine_tui.core.log.records import Record, not_a_metric

NAN = float("nan")
SUFFIX = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12, "Q": 1e15}
ROUNDED = (
    "steps printed with a K/M/B suffix are rounded where they were printed (10K is any "
    "step from 9500 to 10500): two prints of one rounded step are read as one step"
)


def compile_patterns(patterns: object, where: str = "source.patterns") -> list[UserPattern]:
    """[source] patterns, compiled; ValueError(key, expected) naming a bad one."""
    if isinstance(patterns, str):
        patterns = [patterns]
    if not (
        isinstance(patterns, list) and patterns and all(isinstance(p, str) and p for p in patterns)
    ):
        raise ValueError(
            where,
            "expected a regular expression or a list of them, each with "
            "a named group `step` (like 'step:(?P<step>\\S+) .*loss:(?P<loss>\\S+)')",
        )
    return [_compiled(text, f"{where}[{n}]") for n, text in enumerate(patterns)]


def _compiled(text: str, key: str) -> UserPattern:
    """One pattern compiled: a regular expression with a named group `step` and another."""
    try:
        compiled = UserPattern(text)
    except PatternError as exc:
        if exc.invalid:
            raise ValueError(key, f"{text!r} is not a regular expression ({exc})") from None
        raise ValueError(key, f"{text[:60]!r}: {exc}") from None
    if "step" not in compiled.groupindex:
        raise ValueError(key, f"{text!r} has no named group `step` (expected (?P<step>...))")
    if len(compiled.groupindex) < 2:
        raise ValueError(
            key,
            f"{text!r} names no field besides the step (expected a group like (?P<loss>\\S+))",
        )
    return compiled


def parse_number(text: str) -> tuple[float, bool] | None:
    """A printed number, with LeRobot's K/M/B/T/Q suffix if it has one.

    Returns (value, suffixed), or None when the text is not a number."""
    text = text.strip().rstrip(",;")
    scale = SUFFIX.get(text[-1:], 0.0)
    body = text[:-1] if scale else text
    if not body or body[-1:] == "_" or "_" in body:
        return None
    try:
        value = float(body)
    except ValueError:
        return None
    return (value * scale, True) if scale else (value, False)


def _time(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.strip().replace(",", ".")).timestamp()
    except ValueError:
        return NAN


class LinesDecoder(Unread):
    """Printed lines (appended bytes) in, records out.

    Each line matched by a pattern is one step's values, grouped (base.Grouper) into its train
    record and probe."""

    kind = "lines"
    whole = False

    def __init__(self, fields: FieldMap | None = None, patterns: Sequence[str] = ()) -> None:
        super().__init__()
        self.patterns = compile_patterns(list(patterns)) if patterns else []
        self.grouper = Grouper(fields or FieldMap())
        self.cutter = LineCutter(track=False)
        self.line = 0
        self.rounded = False

    @property
    def notes(self) -> list[str]:
        """What the decoder read in a way worth saying (not an error)."""
        return [ROUNDED] if self.rounded else []

    def feed(self, data: bytes) -> list[Record]:
        out: list[Record] = []
        self._lines(self.cutter.feed(data)[0], out)
        return out

    def _lines(self, lines: list[bytes], out: list[Record]) -> None:
        for raw in lines:
            self.line += 1
            if raw:
                self._line(raw.decode("utf-8", "replace"), out)

    def _line(self, text: str, out: list[Record]) -> None:
        where = f"line {self.line}"
        found = self._match(text, where)
        if found is None:
            return
        groups = {k: v for k, v in found.items() if v is not None}
        groups.pop("step", None)
        step = self._step(found["step"], where)
        if step is None:
            return
        when = _time(groups.pop("time")) if "time" in groups else NAN
        at = when if math.isfinite(when) else NAN
        for key, value in groups.items():
            self._value(step, at, key, value, where, out)

    def _match(self, text: str, where: str) -> dict[str, str | None] | None:
        """The groups of the first pattern that matches the line (None: none matches it).

        A pattern that runs past its time is refused (InputError): a read that skipped such
        lines would lie."""
        for pattern in self.patterns:
            try:
                m = pattern.search(text)
            except PatternError as exc:
                raise InputError(f"{where}: {exc}; refused") from None
            if m is not None:
                return m.groupdict()
        return None

    def _step(self, text: str | None, where: str) -> int | None:
        """The matched line's step; None, noted, where it is not a number or not a step."""
        parsed = parse_number(text or "")
        if parsed is None:
            self.note_bad(where, f"step {text!r} is not a number")
            return None
        step = step_of(parsed[0])
        if isinstance(step, str):
            self.note_bad(where, step)
            return None
        self.rounded |= parsed[1]
        return step

    def _value(
        self, step: int, at: float, key: str, value: str, where: str, out: list[Record]
    ) -> None:
        """A printed value into the grouper; one not a number is kept for a probe, else noted."""
        x = parse_number(value)
        if x is None and self.grouper.fields.is_eval(key):  # a probe value: kept, counted
            self.grouper.add(step, at, key, not_a_metric(value) or repr(value), out)
        elif x is None:
            self.note_bad(where, f"{key} at step {step}: {value!r} is not a number")
        else:
            self.grouper.add(step, at, key, x[0], out)

    def finish(self) -> list[Record]:
        out: list[Record] = []
        self._lines(self.cutter.flush()[0], out)
        self.grouper.flush(out)
        return out
