"""Row formats: Hugging Face Trainer's `trainer_state.json`, CSV (Lightning's `CSVLogger`
`metrics.csv`, or any CSV with a step column), and JSONL from any writer with a field map.

`trainer_state.json` and Lightning's `metrics.csv` are rewritten in place (`whole = True`):
each feed is the whole file, and only the steps after those already returned come out (the
last step stays held until a later one, or `finish()`, since a later save may add keys to it:
the eval written after the train loss of the same step). JSONL is appended (`whole = False`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping

import orjson

from fontaine_tui.core.log.formats.base import FieldMap, Grouper, numbers
from fontaine_tui.core.log.lines import LineCutter
from fontaine_tui.core.log.records import Record

NAN = float("nan")
# the summary Trainer adds at the end of training (train_loss there is the mean over the run)
HF_SUMMARY = ("train_runtime", "train_samples_per_second", "train_steps_per_second",
              "total_flos", "train_loss")
HF_FRAME = ("step", "epoch")


class FormatError(ValueError):
    """The file is not of the format it was read as (one line: what was expected)."""


class _Whole:
    """A rewritten file: feed the whole of it, get the steps not returned before."""

    whole = True

    def __init__(self, fields: FieldMap | None = None) -> None:
        self.grouper = Grouper(fields or FieldMap())
        self._held = -1  # the step of the group held back (returned at the next step)

    def _rows(self, data: bytes) -> Iterable[tuple[int, float, Mapping[str, float]]]:
        raise NotImplementedError

    def feed(self, data: bytes) -> list[Record]:
        out: list[Record] = []
        g = self.grouper
        for step, time, row in self._rows(data):
            if step < self._held or step <= g.emitted:
                continue  # returned by an earlier read of the file
            g.add_row(step, time, row, out)
            self._held = step
        return out

    def finish(self) -> list[Record]:
        out: list[Record] = []
        self.grouper.flush(out)
        return out


class TrainerStateDecoder(_Whole):
    """`trainer_state.json`: its `log_history`, one entry per `logging_steps` (train loss,
    learning rate, grad norm) and per evaluation (`eval_*`), each with its `step`."""

    kind = "hf_trainer"

    def _rows(self, data: bytes) -> Iterable[tuple[int, float, Mapping[str, float]]]:
        try:
            state = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise FormatError(f"not JSON ({exc})") from None
        history = state.get("log_history") if isinstance(state, dict) else None
        if not isinstance(history, list):
            raise FormatError("expected a JSON object with a log_history list (a Hugging Face "
                              "Trainer trainer_state.json)")
        for entry in history:
            if not isinstance(entry, dict) or "train_runtime" in entry:
                continue
            step = entry.get("step")
            if isinstance(step, int) and not isinstance(step, bool) and step >= 0:
                yield step, NAN, numbers(entry, HF_FRAME)


class CsvDecoder(_Whole):
    """A CSV with a header and a step column (`FieldMap.step`); empty cells are absent, so
    Lightning's sparse rows (train and val metrics on separate rows) group by step."""

    kind = "csv"

    def _rows(self, data: bytes) -> Iterable[tuple[int, float, Mapping[str, float]]]:
        text = data.decode("utf-8", "replace")
        reader = csv.DictReader(io.StringIO(text))
        fields = self.grouper.fields
        if reader.fieldnames is None:
            return
        if fields.step not in reader.fieldnames:
            raise FormatError(f"expected a {fields.step!r} column (columns: "
                              f"{', '.join(reader.fieldnames[:12])})")
        skip = {fields.step, fields.time, "epoch"}
        rows = []
        for row in reader:
            try:
                step = int(float(row[fields.step]))
            except (TypeError, ValueError):
                continue
            values = {}
            for key, cell in row.items():
                if key in skip or key is None or not cell:
                    continue
                try:
                    values[key] = float(cell)
                except ValueError:
                    continue
            time = _float(row.get(fields.time)) if fields.time else NAN
            rows.append((step, time, values))
        rows.sort(key=lambda r: r[0])  # stable: a step's rows keep their order
        yield from rows


def _float(cell: str | None) -> float:
    try:
        return float(cell) if cell else NAN
    except ValueError:
        return NAN


class JsonlDecoder:
    """JSON lines from any writer: each object's `FieldMap.step` field is its step; its
    numbers (nested objects flattened as `a.b`) are the keys the field map sorts into eval
    probe and train loss. Lines without a step are skipped and counted."""

    kind = "jsonl"
    whole = False

    def __init__(self, fields: FieldMap | None = None) -> None:
        self.grouper = Grouper(fields or FieldMap())
        self.cutter = LineCutter(track=False)
        self.skipped = 0

    def feed(self, data: bytes) -> list[Record]:
        out: list[Record] = []
        self._lines(self.cutter.feed(data)[0], out)
        return out

    def _lines(self, lines: list[bytes], out: list[Record]) -> None:
        f = self.grouper.fields
        for raw in lines:
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                self.skipped += 1
                continue
            step = obj.get(f.step) if isinstance(obj, dict) else None
            if not isinstance(step, int) or isinstance(step, bool) or step < 0:
                self.skipped += 1
                continue
            time = obj.get(f.time) if f.time else None
            row: dict[str, float] = {}
            _flatten(obj, row, "", (f.step, f.time))
            self.grouper.add_row(step, float(time) if isinstance(time, (int, float)) else NAN,
                                 row, out)

    def finish(self) -> list[Record]:
        out: list[Record] = []
        lines, _ = self.cutter.flush()
        self._lines(lines, out)
        self.grouper.flush(out)
        return out


def _flatten(obj: Mapping[str, object], out: dict[str, float], prefix: str,
             skip: tuple[str, ...], depth: int = 0) -> None:
    for key, value in obj.items():
        if not prefix and key in skip:
            continue
        if isinstance(value, dict) and depth < 4:
            _flatten(value, out, f"{prefix}{key}.", skip, depth + 1)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[f"{prefix}{key}"] = float(value)
