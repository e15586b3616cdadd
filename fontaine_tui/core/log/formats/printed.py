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
A pattern with a `step` group and no other is a step line: the lines after it that a pattern
without a `step` group matches are read at its step (LeRobot 0.4 prints `Eval policy at step N`,
then the eval's numbers on a line of their own). A pattern set may be named instead of written
(`patterns = "lerobot"`: PATTERN_SETS).

Numbers may carry LeRobot's decimal suffixes (K, M, B, T, Q: thousands, millions, ...). A step
printed with one is rounded where it was printed (`10K` is any step from 9500 to 10500), which is
reported once."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.limits import PATTERN_COUNT, PatternError, UserPattern
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

# LeRobot's `lerobot-train` (lerobot/scripts/lerobot_train.py, 0.4; scripts/train.py before):
# the train line is `logging.info(train_tracker)` (utils/logging_utils.py's MetricsTracker:
# `step:20K smpl:640K ep:1K epch:12.34 loss:0.123 grdn:1.234 lr:1.0e-04 updt_s:... data_s:...`,
# the step, samples and episodes by utils.py's format_big_number), after init_logging's
# `INFO 2025-01-02 10:00:00 <file:line>`; the eval is `logging.info(eval_tracker)` up to 0.3
# (`step:20K ... epch:12.34 ∑rwrd:12.345 success:40.0 eval_s:...`) and from 0.4 the line
# `Eval policy at step 20000` then `Suite overall aggregated: {'avg_sum_reward': ..., ...}`.
# Its eval keys are named eval_* (the default eval patterns hold them).
LEROBOT = (
    r"(?:(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) .*)?\bstep:(?P<step>\S+) smpl:\S+ ep:\S+ "
    r"epch:\S+ loss:(?P<loss>\S+) grdn:(?P<grad_norm>\S+) lr:(?P<lr>\S+)",
    r"\bstep:(?P<step>\S+) smpl:\S+ ep:\S+ epch:\S+ ∑rwrd:(?P<eval_avg_sum_reward>\S+) "
    r"success:(?P<eval_pc_success>\S+)",
    r"\bEval policy at step (?P<step>\d+)$",
    r"\bSuite overall aggregated: \{'avg_sum_reward': (?P<eval_avg_sum_reward>[^,}]+), "
    r"'avg_max_reward': (?P<eval_avg_max_reward>[^,}]+), 'pc_success': (?P<eval_pc_success>[^,}]+)",
)
PATTERN_SETS = {"lerobot": LEROBOT}  # a [source] patterns that names one reads with it


def named_set(patterns: object) -> tuple[str, ...] | None:
    """The patterns of the set `patterns` names (a string, or a list of one), else None."""
    name = patterns[0] if isinstance(patterns, list) and len(patterns) == 1 else patterns
    return PATTERN_SETS.get(name) if isinstance(name, str) else None


def compile_patterns(patterns: object, where: str = "source.patterns") -> list[UserPattern]:
    """[source] patterns (or a set's name: PATTERN_SETS), compiled; ValueError(key, expected)."""
    named = named_set(patterns)
    patterns = list(named) if named else patterns
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
    if len(patterns) > PATTERN_COUNT:  # each line is searched by each
        raise ValueError(
            where, f"{len(patterns)} patterns, more than the {PATTERN_COUNT} one may hold"
        )
    compiled = [_compiled(text, f"{where}[{n}]") for n, text in enumerate(patterns)]
    if not any("step" in c.groupindex for c in compiled):
        raise ValueError(
            f"{where}[0]", f"{patterns[0]!r} has no named group `step` (expected (?P<step>...))"
        )
    if all(set(c.groupindex) == {"step"} for c in compiled):
        raise ValueError(
            f"{where}[0]",
            f"{patterns[0]!r} names no field besides the step (expected a group like "
            "(?P<loss>\\S+))",
        )
    return compiled


def _compiled(text: str, key: str) -> UserPattern:
    """One pattern compiled: a regular expression with a named group.

    A `step` group alone makes a step line; fields without one are read at a step line's step."""
    try:
        compiled = UserPattern(text)
    except PatternError as exc:
        if exc.invalid:
            raise ValueError(key, f"{text!r} is not a regular expression ({exc})") from None
        raise ValueError(key, f"{text[:60]!r}: {exc}") from None
    if not compiled.groupindex:
        raise ValueError(
            key, f"{text!r} has no named group `step` (expected (?P<step>...), or fields)"
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


class SlowPattern(InputError):
    """A pattern's search ran past its time: which pattern (by index), why, on which line."""

    def __init__(self, index: int, text: str, why: PatternError, line: int) -> None:
        super().__init__(f"log line {line}: source.patterns[{index}] {why}; refused")
        self.index, self.text, self.why, self.line = index, text, why, line


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
        self.at: int | None = None  # the step of the last step line

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
        step = self._step(found["step"], where) if "step" in found else self._at(where)
        if step is None:
            return
        if set(found) == {"step"}:  # a step line: the lines after it are read at its step
            self.at = step
            return
        when = _time(groups.pop("time")) if "time" in groups else NAN
        at = when if math.isfinite(when) else NAN
        for key, value in groups.items():
            self._value(step, at, key, value, where, out)

    def _match(self, text: str, where: str) -> dict[str, str | None] | None:
        """The groups of the first pattern that matches the line (None: none matches it).

        A pattern that runs past its time is refused (InputError): a read that skipped such
        lines would lie."""
        for n, pattern in enumerate(self.patterns):
            try:
                m = pattern.search(text)
            except PatternError as exc:
                raise SlowPattern(n, pattern.text, exc, self.line) from None
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

    def _at(self, where: str) -> int | None:
        """The step of the last step line, for a line whose pattern has no `step` group."""
        if self.at is None:
            self.note_bad(where, "no step line before it (its pattern has no `step` group)")
        return self.at

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
