"""Row formats: Hugging Face Trainer's `trainer_state.json`, CSV, and JSONL.

The CSV is Lightning's `CSVLogger` `metrics.csv`, or any CSV with a step column. The JSONL comes
from any writer, read with a field map; a JSONL line may be an alert the trainer raises
(`{"kind": "alert", ...}` or `{"alert": {...}}`).

`trainer_state.json` and Lightning's `metrics.csv` are rewritten in place (`whole = True`):
each feed is the whole file, and only the steps after those already returned come out (the
last step stays held until a later one, or `finish()`, since a later save may add keys to it:
the eval written after the train loss of the same step). JSONL is appended (`whole = False`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal, InvalidOperation

from fontaine_tui.core.log import jsontext
from fontaine_tui.core.log.formats.base import Row, Unread, Whole, number, numbers, step_of
from fontaine_tui.core.log.formats.grouper import FieldMap, Grouper
from fontaine_tui.core.log.lines import LineCutter
from fontaine_tui.core.log.records import NO_STEP, BadAlert, Record, make_alert, not_a_metric

NAN = float("nan")
# the summary Trainer adds at the end of training (train_loss there is the mean over the run)
HF_SUMMARY = (
    "train_runtime",
    "train_samples_per_second",
    "train_steps_per_second",
    "total_flos",
    "train_loss",
)
HF_FRAME = ("step", "epoch")


class FormatError(ValueError):
    """The file is not of the format it was read as (one line: what was expected)."""


class TrainerStateDecoder(Whole):
    """`trainer_state.json`: its `log_history`, read into records.

    It has one entry per `logging_steps` (train loss, learning rate, grad norm) and per
    evaluation (`eval_*`), each with its `step`. NaN and Infinity (which transformers writes for
    a diverged loss) are read as numbers."""

    kind = "hf_trainer"

    def feed(self, data: bytes) -> list[Record]:
        try:
            state = jsontext.loads(data)
        except ValueError as exc:
            raise FormatError(str(exc)) from None
        self.clear_bad()
        readings = [
            self._rows(doc, count=k == 0)  # the first reading counts what is unread
            for k, doc in enumerate(jsontext.readings(data, state))
        ]
        first = readings[0]
        for other in readings[1:]:  # an entry whose step is written twice: no step
            for n in set(first) & set(other):
                if first[n][0] != other[n][0]:
                    self.note_bad(f"log_history[{n}]", "'step' written twice with two values")
                    del first[n], other[n]
        return self.group([list(rows.values()) for rows in readings])

    def _rows(self, state: object, count: bool) -> dict[int, Row]:
        """The rows of a log_history by entry index.

        The end-of-training summary's own keys are left out. An entry without a whole-number
        step is counted (once)."""
        history = state.get("log_history") if isinstance(state, dict) else None
        if not isinstance(history, list):
            raise FormatError(
                "expected a JSON object with a log_history list (a Hugging Face "
                "Trainer trainer_state.json)"
            )
        rows: dict[int, Row] = {}
        for n, entry in enumerate(history):
            if not isinstance(entry, dict):
                continue
            step = step_of(entry.get("step"))
            if isinstance(step, str):
                if count:
                    self.note_bad(f"log_history[{n}]", step)
                continue
            skip = HF_FRAME + HF_SUMMARY if "train_runtime" in entry else HF_FRAME
            values = numbers(entry, skip)
            if values:
                rows[n] = (step, NAN, values)
        return rows


class CsvDecoder(Whole):
    """A CSV with a header and a step column (`FieldMap.step`).

    Empty cells are absent, so Lightning's sparse rows (train and val metrics on separate rows)
    group by step. A column named twice in the header keeps both cells (two values for one key:
    a conflict when they differ). A row whose step is not a whole number is counted, never
    rounded. A subclass with another `delimiter` reads another dialect (tab-separated)."""

    kind = "csv"
    delimiter = ","

    def feed(self, data: bytes) -> list[Record]:
        self.clear_bad()
        try:
            rows = self._rows(data)
        except csv.Error as exc:
            raise FormatError(f"not CSV a reader can take ({exc})") from None
        return self.group([rows])

    def _rows(self, data: bytes) -> list[Row]:
        text = data.decode("utf-8-sig", "replace")
        reader = csv.reader(io.StringIO(text), delimiter=self.delimiter)
        header = next(reader, None)
        if header is None:
            return []
        at, when, cols = self._columns(header)
        rows: list[Row] = []
        for line, cells in enumerate(reader, start=2):
            if len(cells) <= at or not cells[at].strip():
                continue
            step = _step_cell(cells[at])
            if isinstance(step, str):
                self.note_bad(f"row {line}", step)
                continue
            rows += _cell_rows(step, cells, cols, when)
        return rows

    def _columns(self, header: list[str]) -> tuple[int, int, list[tuple[int, str]]]:
        """The header's step column, time column (-1: none) and value columns (index, key).

        FormatError where it has no step column."""
        fields = self.grouper.fields
        if fields.step not in header:
            raise FormatError(
                f"expected a {fields.step!r} column (columns: {', '.join(header[:12])})"
            )
        at = header.index(fields.step)
        when = header.index(fields.time) if fields.time and fields.time in header else -1
        skip = {fields.step, fields.time, "epoch"}
        return at, when, [(i, key) for i, key in enumerate(header) if key not in skip]


def _cell_rows(step: int, cells: list[str], cols: list[tuple[int, str]], when: int) -> list[Row]:
    """A CSV row's values at `step`, one row each; an empty cell is absent."""
    out: list[Row] = []
    for i, key in cols:
        cell = cells[i] if i < len(cells) else ""
        value = number(_cell(cell)) if cell else None
        if value is not None:
            out.append((step, _float(cells[when]) if 0 <= when < len(cells) else NAN, {key: value}))
    return out


def _step_cell(cell: str) -> int | str:
    """A step cell as a whole number, read from its text.

    "80.0" is 80. "79.9999999999999999", which a float would round onto 80, is not a step."""
    text = cell.strip()
    try:
        exact = Decimal(text)
    except InvalidOperation:
        return f"step {text!r} is not a whole number"
    if not exact.is_finite() or exact != exact.to_integral_value():
        return f"step {text!r} is not a whole number"
    return step_of(int(exact))


def _cell(cell: str) -> float | int | str:
    """A CSV cell as a number (an integer when it is written as one), else the text."""
    text = cell.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _float(cell: str | None) -> float:
    try:
        return float(cell) if cell else NAN
    except ValueError:
        return NAN


class JsonlDecoder(Unread):
    """JSON lines from any writer, read with a field map.

    Each object's `FieldMap.step` field is its step. Its numbers (nested objects flattened as
    `a.b`) are the keys the field map sorts into eval probe and train loss. With the field map's
    `probe_field`, the line is instead a probe or a train line by that field's value (in any
    order of lines). NaN and Infinity tokens are numbers; an eval key's boolean, string or
    array is kept as what it is (the probe's `not_numbers`, counted). A line that cannot be
    read, or has no whole-number step, is counted in `bad_count` (`bad`: where and why). A key
    written twice in a line with two values is two values for the step (a conflict, when it is
    an eval key)."""

    kind = "jsonl"
    whole = False

    def __init__(self, fields: FieldMap | None = None) -> None:
        f = fields or FieldMap()
        self.split = bool(f.probe_field)
        self.grouper = Grouper(replace(f, eval=()) if self.split else f)
        self.probes = Grouper(replace(f, eval=("*",)), train=False) if self.split else None
        self.cutter = LineCutter(track=False)
        self.line = 0
        super().__init__()

    @property
    def groupers(self) -> list[Grouper]:
        return [self.grouper, *([self.probes] if self.probes is not None else [])]

    def feed(self, data: bytes) -> list[Record]:
        out: list[Record] = []
        self._lines(self.cutter.feed(data)[0], out)
        return out

    def _note(self, why: str) -> None:
        self.note_bad(f"line {self.line}", why)

    def _lines(self, lines: list[bytes], out: list[Record]) -> None:
        f = self.grouper.fields
        for raw in lines:
            self.line += 1
            if not raw.strip():
                continue
            read = self._readings(raw, f)
            if read is None:
                continue
            obj, readings = read
            if obj.get("kind") == "alert" or isinstance(obj.get("alert"), dict):
                self._alert(obj, f, out)
                continue
            for reading in readings:
                self._object(reading, f, out)

    def _readings(self, raw: bytes, f: FieldMap) -> tuple[dict, list[object]] | None:
        """A line's object and its readings (two where it names a key twice with two values).

        None, noted, where it is not a JSON object or names its step twice with two values."""
        try:
            obj = jsontext.loads(raw)
        except ValueError as exc:
            self._note(str(exc))
            return None
        if not isinstance(obj, dict):
            self._note(f"expected a JSON object, got {type(obj).__name__}")
            return None
        readings = jsontext.readings(raw, obj)
        steps = {repr(r.get(f.step)) if isinstance(r, dict) else "" for r in readings}
        if len(steps) > 1:  # which step the line is for cannot be known
            self._note(f"{f.step!r} written twice with two values")
            return None
        return obj, readings

    def _alert(self, obj: dict, f: FieldMap, out: list[Record]) -> None:
        """A line the trainer wrote as an alert, at the step key if it has one.

        The line is `{"kind": "alert", "title": ...}` or `{"alert": {"title": ..., "text": ...,
        "level": ...}}`. It is no evidence: a bad one is counted with the lines not read."""
        body = obj["alert"] if isinstance(obj.get("alert"), dict) else obj
        raw_step = obj.get(f.step, body.get("step"))
        step = NO_STEP if raw_step is None else step_of(raw_step)
        when = number(obj.get(f.time) if f.time else None)
        if isinstance(step, str):
            self._note(f"an alert's {f.step}: {step}")
            return
        try:
            out.append(
                make_alert(
                    body.get("level"),
                    body.get("title"),
                    body.get("text"),
                    step,
                    when if when is not None else NAN,
                )
            )
        except BadAlert as exc:
            self._note(str(exc))

    def _object(self, obj: object, f: FieldMap, out: list[Record]) -> None:
        if not isinstance(obj, dict):
            return
        step = step_of(obj.get(f.step))
        if isinstance(step, str):
            self._note(f"{f.step}: {step}" if f.step in obj else f"no {f.step!r} field")
            return
        when = number(obj.get(f.time)) if f.time else None
        pairs: list[tuple[str, float | str]] = []
        _flatten(obj, pairs, "", (f.step, f.time, f.probe_field))
        grouper = self.grouper
        if self.probes is not None and _text(obj.get(f.probe_field)) == f.probe_value:
            grouper = self.probes
        at = when if when is not None else NAN
        for key, value in pairs:  # a key reached twice ("a.b" and {"a": {"b"}}): both go in
            grouper.add(step, at, key, value, out)

    def finish(self) -> list[Record]:
        out: list[Record] = []
        lines, _ = self.cutter.flush()
        self._lines(lines, out)
        for grouper in self.groupers:
            grouper.flush(out)
        return out


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _flatten(
    obj: Mapping[str, object],
    out: list[tuple[str, float | str]],
    prefix: str,
    skip: tuple[str, ...],
    depth: int = 0,
) -> None:
    """Every leaf of `obj` by its dotted path: a number, or why it is not one.

    A boolean, a string or an array goes in with records.not_a_metric's words; a null is not
    logged."""
    for key, value in obj.items():
        if not prefix and key in skip:
            continue
        if isinstance(value, dict) and depth < 4:
            _flatten(value, out, f"{prefix}{key}.", skip, depth + 1)
        elif (x := number(value)) is not None:
            out.append((f"{prefix}{key}", x))
        elif value is not None and (why := not_a_metric(value)) is not None:
            out.append((f"{prefix}{key}", why))
