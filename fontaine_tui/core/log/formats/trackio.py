"""A trackio project's SQLite store, one chosen run, read without trackio.

The store is one SQLite file per project (`$TRACKIO_DIR/<project>.db`, by default under
~/.cache/huggingface/trackio), with several runs in it. Its `metrics` table holds one row per
`trackio.log(...)` call: the run's id and name, the step, an ISO timestamp and the logged values as
one JSON object (an infinity or NaN written as the strings "Infinity", "-Infinity", "NaN"). The
store is opened read-only (mlflow.py's `connect`), so the writer is never blocked or changed.

Its `alerts` table holds each `trackio.alert(title, text, level, step)` (trackio 0.40 on): read
with the run's rows, each an `Alert` record (core/log/records.py), never evidence.

trackio keeps no record of a run's end (`trackio.finish()` writes nothing to the store), so a
trackio run never says it ended: `attach --until-end` waits, and `bank` asks for `--ended`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from fontaine_tui.core.limits import Connection, SqliteError, json_loads
from fontaine_tui.core.log.formats.base import Row, Whole, number, step_of
from fontaine_tui.core.log.formats.grouper import Value
from fontaine_tui.core.log.formats.mlflow import connect, locked
from fontaine_tui.core.log.formats.rows import FormatError
from fontaine_tui.core.log.records import NO_STEP, BadAlert, Record, make_alert, not_a_metric

NAN = float("nan")
DB_EXT = ".db"
SQLITE_MAGIC = b"SQLite format 3\x00"
SPECIAL = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": NAN}  # trackio's JSON floats


@dataclass(frozen=True, slots=True)
class TrackioRun:
    run_id: str
    name: str

    def describe(self) -> str:
        return (
            f"{self.name!r}" if self.name == self.run_id else f"{self.name!r} ({self.run_id[:12]})"
        )


# a metrics row as the store holds it: (row id, step, timestamp, metrics JSON), unchecked
RawRow = tuple[object, object, object, object]
# an alerts row: (ALERT, row id, step, timestamp, title, text, level), unchecked
AlertRow = tuple[str, object, object, object, object, object, object]
ALERT = "alert"


def is_store(path: Path) -> bool:
    """Is `path` a trackio project store (an SQLite file with trackio's `metrics` table)?"""
    try:
        with open(path, "rb") as fh:
            if fh.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                return False
        db = connect(path)
    except (OSError, FormatError, ValueError):
        return False
    try:
        return {"run_name", "step", "metrics", "timestamp"} <= _columns(db)
    except SqliteError:
        return False
    finally:
        db.close()


def stores(folder: Path) -> list[Path]:
    """The trackio project stores in `folder` (TRACKIO_DIR, or a folder holding one)."""
    return sorted(p for p in folder.glob(f"*{DB_EXT}") if p.is_file() and is_store(p))


def _columns(db: Connection) -> set[str]:
    return {str(r[1]) for r in db.execute("PRAGMA table_info(metrics)")}


def _id_column(db: Connection) -> str:
    """The column naming a run.

    It is `run_id` (trackio 0.24 on), else `run_name` (older stores, where a run was only its
    name)."""
    return "run_id" if "run_id" in _columns(db) else "run_name"


def store_runs(db: Connection) -> list[TrackioRun]:
    """The store's runs, in the order they first logged."""
    try:
        col = _id_column(db)
        rows = db.execute(
            f"SELECT {col}, run_name, MIN(id) FROM metrics GROUP BY {col} ORDER BY MIN(id)"
        ).fetchall()
    except SqliteError as exc:
        raise FormatError(locked(exc) or f"not a trackio store ({exc})") from None
    return [TrackioRun(str(a), str(b or "")) for a, b, _ in rows]


def store_rows(db: Connection, run: TrackioRun) -> list[RawRow]:
    try:
        col = _id_column(db)
        return list(
            db.execute(
                f"SELECT id, step, timestamp, metrics FROM metrics WHERE {col} = ? ORDER BY id",
                (run.run_id,),
            )
        )
    except SqliteError as exc:
        raise FormatError(locked(exc) or f"cannot read the metrics table ({exc})") from None


def store_alerts(db: Connection, run: TrackioRun) -> list[AlertRow]:
    """The run's alerts, in the order raised; none in a store older than trackio's alerts."""
    try:
        names = {str(r[1]) for r in db.execute("PRAGMA table_info(alerts)")}
        if not names:
            return []
        col = "run_id" if "run_id" in names else "run_name"
        return [
            (ALERT, *row)
            for row in db.execute(
                f"SELECT id, step, timestamp, title, text, level FROM alerts WHERE {col} = ? "
                "ORDER BY id",
                (run.run_id,),
            )
        ]
    except SqliteError as exc:
        raise FormatError(locked(exc) or f"cannot read the alerts table ({exc})") from None


def choose(runs: list[TrackioRun], where: str, run: str = "") -> TrackioRun:
    """The run [source] run names (by name, id or id prefix), or the only one.

    Otherwise a FormatError names the runs (runs are never merged)."""
    found = _named(runs, run)
    if len(found) == 1:
        return found[0]
    if not runs:
        raise FormatError(f"{where}: no run has logged to this store yet")
    names = ", ".join(r.describe() for r in (found or runs)[:8]) or "none"
    if not found:
        raise FormatError(f"{where}: no run named {run!r}; runs: {names}")
    chose = f"run={run!r}" if run else "none chosen"
    raise FormatError(
        f"{where}: {len(found)} runs and {chose}: set [source] run (bank: --run) to one of {names}"
    )


def _named(runs: list[TrackioRun], run: str) -> list[TrackioRun]:
    """The runs `run` names: by name or id, else by id prefix (all where it is "")."""
    found = [r for r in runs if not run or r.name == run or r.run_id == run]
    if run and not found:
        found = [r for r in runs if r.run_id.startswith(run)]
    return found


def _time(stamp: object) -> float:
    """An ISO timestamp (trackio writes UTC with its offset) in seconds; NaN if unreadable."""
    if not isinstance(stamp, str):
        return NAN
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return NAN


def _value(value: object) -> float | None:
    if isinstance(value, str):
        return SPECIAL.get(value)
    return number(value)


class TrackioDecoder(Whole):
    """The rows of one trackio run in, records out (whole: the run's rows each time).

    A train value that is not a number (text, a histogram, a table, a nested object) is counted
    among the unreadable entries, never dropped silently. An eval value that is not a number is
    kept as what it is (the probe's `not_numbers`, counted in the grouper's `odd_values`): which
    key, step and value it was is a probe's value, said through the evidence gate
    (core/log/oddvalues.py), never in a notice."""

    kind = "trackio"

    def feed_rows(self, rows: Iterable[RawRow | AlertRow]) -> list[Record]:

        self.clear_bad()
        checked: list[Row] = []
        alerts: list[Record] = []
        for row in rows:
            if len(row) == 7:
                self._alert(row, alerts)
                continue
            row_id, raw_step, stamp, text = row
            where = f"metrics row {row_id}"
            step = step_of(raw_step)
            if isinstance(step, str):
                self.note_bad(where, step)
                continue
            values = self._row_values(where, step, text)
            if values:
                checked.append((step, _time(stamp), values))
        return self._new(alerts) + self.group([checked])

    def _row_values(self, where: str, step: int, text: object) -> dict[str, Value]:
        """A metrics row's values by key: numbers, and an eval key's non-number as what it is.

        A train value that is not a number, or a row whose metrics are not a JSON object, is
        noted."""
        try:  # within core/limits.py's depth bound (a deep row is one bad row)
            doc = json_loads(text if isinstance(text, (str, bytes)) else b"")
        except ValueError as exc:
            self.note_bad(where, f"step {step}: its metrics are not JSON ({exc})")
            return {}
        if not isinstance(doc, dict):
            self.note_bad(where, f"step {step}: its metrics are not a JSON object")
            return {}
        values: dict[str, Value] = {}
        for key, value in doc.items():
            x = _value(value)
            if x is None and self.fields.is_eval(str(key)):
                values[str(key)] = not_a_metric(value) or _shown(value)  # a probe value
            elif x is None:
                self.note_bad(where, f"{key} at step {step}: {_shown(value)} is not a number")
            else:
                values[str(key)] = x
        return values

    def _alert(self, row: tuple[object, ...], out: list[Record]) -> None:
        """One `trackio.alert(...)`; a row that is no alert is counted with the unread."""
        _, row_id, raw_step, stamp, title, text, level = row
        step = NO_STEP if raw_step is None else step_of(raw_step)
        try:
            if isinstance(step, str):
                raise BadAlert(f"alert {step}")
            out.append(make_alert(level, title, text, step, _time(stamp)))
        except BadAlert as exc:
            self.note_bad(f"alerts row {row_id}", str(exc))

    def feed(self, data: bytes) -> list[Record]:
        raise FormatError("a trackio store is read as rows (feed_rows), not bytes")


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def run_rows(store: Path, options: Mapping[str, str]) -> tuple[TrackioRun, list[RawRow | AlertRow]]:
    """Every row of the chosen run of a project store (`<project>.db`), its alerts first."""
    db = connect(store)
    try:
        info = choose(store_runs(db), "source.run", options.get("run", ""))
        return info, [*store_alerts(db, info), *store_rows(db, info)]
    finally:
        db.close()
