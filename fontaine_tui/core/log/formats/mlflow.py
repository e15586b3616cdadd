"""MLflow's two local stores, the file store and SQLite, read without MLflow.

The file store is `mlruns/<experiment>/<run>/metrics/<key>`, one `timestamp value step` line per
logged value (a key with `/` is a nested folder). The SQLite store is `mlflow.db`, MLflow's default,
with its `metrics`, `runs` and `experiments` tables, opened read-only so a writer is never
disturbed.

Both are whole reads (`rows(...)` returns every (step, time, key, value) of the run); the
store is small next to a training run and re-read when it changes.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.limits import Connection, SqliteError, open_sqlite, sqlite_refusal
from fontaine_tui.core.log.formats.base import Row, Whole, number, step_of
from fontaine_tui.core.log.formats.grouper import Value
from fontaine_tui.core.log.formats.rows import FormatError
from fontaine_tui.core.log.records import Event, Record, not_a_metric
from fontaine_tui.core.readfile import check_file, read_text, read_whole

NAN = float("nan")
FILE_STORE = "mlruns"
# a file store's meta.yaml keeps a run's status as MLflow's RunStatus number
FILE_STATUS = {"1": "RUNNING", "2": "SCHEDULED", "3": "FINISHED", "4": "FAILED", "5": "KILLED"}
ENDS = {"FINISHED": "end", "FAILED": "error", "KILLED": "error"}  # status -> the end's Event
SQLITE_STORE = "mlflow.db"


@dataclass(frozen=True, slots=True)
class RunInfo:
    run_id: str
    name: str
    experiment: str  # the experiment's id
    experiment_name: str
    status: str = ""  # RUNNING, FINISHED, FAILED, KILLED ("": not known)
    end_ms: float = NAN  # when the run ended, ms since the epoch (NaN: not known)

    def describe(self) -> str:
        return f"{self.run_id[:12]} ({self.name or 'unnamed'}, experiment {self.experiment_name})"


def _meta(path: Path) -> dict[str, str]:
    """An MLflow meta.yaml's top-level `key: value` lines (enough for ids and names)."""
    out: dict[str, str] = {}
    try:
        text = read_text(path, errors="replace")
    except (OSError, InputError):
        return out
    for line in text.splitlines():
        if line[:1] in (" ", "-", "#") or ":" not in line:
            continue
        key, _, value = line.partition(":")
        out[key.strip()] = value.strip().strip("'\"")
    return out


def file_store_runs(root: Path) -> list[RunInfo]:
    """The active runs of a file store (`mlruns/`), every experiment."""
    runs = []
    for exp in sorted(p for p in root.iterdir() if p.is_dir() and p.name != ".trash"):
        emeta = _meta(exp / "meta.yaml")
        if not _deleted(emeta):
            runs += _experiment_runs(exp, emeta)
    return runs


def _experiment_runs(exp: Path, emeta: dict[str, str]) -> list[RunInfo]:
    """The active runs of one experiment folder of a file store (`emeta`: its meta.yaml)."""
    runs = []
    for run in sorted(p for p in exp.iterdir() if (p / "metrics").is_dir()):
        rmeta = _meta(run / "meta.yaml")
        if _deleted(rmeta):
            continue
        runs.append(
            RunInfo(
                rmeta.get("run_id") or run.name,
                rmeta.get("run_name", ""),
                exp.name,
                emeta.get("name", exp.name),
                FILE_STATUS.get(rmeta.get("status", ""), ""),
                _ms(rmeta.get("end_time")),
            )
        )
    return runs


def _deleted(meta: dict[str, str]) -> bool:
    """An experiment or run moved to the trash (its meta.yaml's lifecycle_stage)."""
    return meta.get("lifecycle_stage") == "deleted"


# a metric row as the store holds it: (step, timestamp in ms, key, value, is_nan), unchecked
RawRow = tuple[object, object, object, object, object]


def file_store_rows(root: Path, run: RunInfo) -> list[RawRow]:
    metrics = root / run.experiment / run.run_id / "metrics"
    out: list[RawRow] = []
    for folder, _, files in os.walk(metrics):
        for name in files:
            path = Path(folder) / name
            key = path.relative_to(metrics).as_posix()
            lines = read_whole(path).split(b"\n")
            if lines[-1].strip():  # no newline yet: being written, or cut short
                out.append(
                    (
                        f"{key} line {len(lines)}",
                        None,
                        key,
                        b"no newline at its end (being written, or cut short)",
                        0,
                    )
                )
            for n, line in enumerate(lines[:-1], start=1):
                parts = line.split()
                text = [p.decode("utf-8", "replace") for p in parts]
                if len(text) not in (2, 3):
                    out.append(
                        (f"{key} line {n}", None, key, b"expected 'timestamp value step'", 0)
                    )
                    continue
                out.append((text[2] if len(text) > 2 else "0", text[0], key, text[1], 0))
    return out


def connect(path: Path) -> Connection:
    """The SQLite store, read-only and bounded (core/limits.py's open_sqlite).

    A writer holding it is never blocked or changed, a view is refused, a statement has a
    budget."""
    check_file(path)  # a pipe in its place: InputError, as every reader's open says it
    try:
        return open_sqlite(path)
    except InputError as exc:
        raise FormatError(str(exc).removeprefix(f"{path}: ")) from None


def sqlite_runs(db: Connection) -> list[RunInfo]:
    try:
        rows = db.execute(
            "SELECT r.run_uuid, r.name, r.experiment_id, e.name, r.status, r.end_time "
            "FROM runs r JOIN experiments e "
            "ON r.experiment_id = e.experiment_id WHERE r.lifecycle_stage = 'active' "
            "ORDER BY r.start_time"
        ).fetchall()
    except SqliteError as exc:
        raise FormatError(locked(exc) or f"not an MLflow store ({exc})") from None
    return [
        RunInfo(str(a), str(b or ""), str(c), str(d), str(st or ""), _ms(end))
        for a, b, c, d, st, end in rows
    ]


def _ms(value: object) -> float:
    """A store's end time (ms), NaN when there is none or it is not a number."""
    try:
        return float(value) if value not in (None, "", "null") else NAN  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return NAN


def sqlite_rows(db: Connection, run: RunInfo) -> list[RawRow]:
    try:
        return list(
            db.execute(
                "SELECT step, timestamp, key, value, is_nan FROM metrics "
                "WHERE run_uuid = ? ORDER BY step, timestamp",
                (run.run_id,),
            )
        )
    except SqliteError as exc:
        raise FormatError(locked(exc) or f"cannot read the metrics table ({exc})") from None


def locked(exc: SqliteError) -> str:
    """What to say when the store is locked by another process, or a read ran too long.

    As core/limits.py's sqlite_refusal: "" for any other error."""
    return sqlite_refusal(exc)


def check_row(raw: RawRow) -> tuple[int, float, str, Value] | str:
    """A metric row as (step, time in s, key, value), or why it cannot be read.

    A row cannot be read with a NULL or text step: a store written by something other than
    MLflow, or damaged. A text or NULL value is read as what it is (records.not_a_metric's
    words): an eval key's is kept so, a probe's value (its decoder counts the others)."""
    step, stamp, key, value, is_nan = raw
    if stamp is None and isinstance(value, bytes):  # a file store line that is not one
        return f"metrics/{step}: {value.decode()}"
    if isinstance(step, str) and step.lstrip("-").isdigit():
        step = int(step)
    checked = step_of(step)
    if isinstance(checked, str):
        return f"{key}: {checked}"
    return checked, _seconds(stamp), str(key), _metric_value(value, is_nan)


def _seconds(stamp: object) -> float:
    """A row's timestamp (ms) in seconds; NaN where it has none or it is not a number."""
    try:
        return float(stamp) / 1000.0 if stamp is not None else NAN  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return NAN


def _metric_value(value: object, is_nan: object) -> Value:
    """A row's value: a number, or what it is where it is not one (not_a_metric's words).

    An infinity is read as MLflow's SQL store keeps it (the largest double)."""
    if is_nan:
        return NAN
    if isinstance(value, (str, bytes)):
        try:
            value = float(value)
        except ValueError:
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
            return not_a_metric(text) or repr(text)
    x = number(value)
    if x is None:
        return not_a_metric(value) or repr(value)
    if abs(x) == sys.float_info.max:  # how MLflow's SQL store keeps an infinity
        x = math.copysign(math.inf, x)
    return x


def choose(runs: list[RunInfo], where: str, experiment: str = "", run: str = "") -> RunInfo:
    """The run the options name, or the only one.

    The experiment is named by id or name, the run by id, id prefix or name. Otherwise a
    FormatError lists the runs."""
    found = _named(runs, experiment, run)
    if len(found) == 1:
        return found[0]
    chose = _chosen(experiment, run)
    if not found:
        return _fail(
            where,
            f"no run matches ({chose}); runs: "
            + (", ".join(r.describe() for r in runs[:8]) or "none"),
        )
    return _fail(
        where,
        f"{len(found)} runs and {chose}: set [source] run (bank: --run) to one of "
        + ", ".join(r.describe() for r in found[:8]),
    )


def _named(runs: list[RunInfo], experiment: str, run: str) -> list[RunInfo]:
    """The runs of the experiment named (by id or name) that `run` names (id prefix or name).

    An option that is "" names them all."""
    found = [r for r in runs if not experiment or experiment in (r.experiment, r.experiment_name)]
    if run:
        found = [r for r in found if r.run_id.startswith(run) or r.name == run]
    return found


def _chosen(experiment: str, run: str) -> str:
    """The options given, as the refusal says them ("none chosen" where none is)."""
    given = [f"experiment={experiment!r}" if experiment else "", f"run={run!r}" if run else ""]
    return " ".join(x for x in given if x) or "none chosen"


def _fail(where: str, why: str) -> RunInfo:
    raise FormatError(f"{where}: {why}")


def snapshot_rows(
    doc: Mapping[str, object], where: str, options: Mapping[str, str]
) -> tuple[RunInfo, list[RawRow]]:
    """The chosen run's rows from a store snapshot read on another host.

    The snapshot is SshRun.mlflow_snapshot's: {"runs": [[id, name, experiment id, experiment
    name]], "rows": {id: [[step, ms, key, value, is_nan]]}}."""
    raw_runs = doc.get("runs")
    runs = [
        RunInfo(str(r[0]), str(r[1]), str(r[2]), str(r[3]))
        for r in (raw_runs if isinstance(raw_runs, list) else [])
        if isinstance(r, list) and len(r) == 4
    ]
    info = choose(runs, where, options.get("experiment", ""), options.get("run", ""))
    table = doc.get("rows")
    rows = table.get(info.run_id, []) if isinstance(table, dict) else []
    return info, [_snapshot_row(r) for r in (rows if isinstance(rows, list) else [])]


def _snapshot_row(r: object) -> RawRow:
    """A snapshot's row as the store holds it.

    One that is not a row is one check_row refuses (its step "?")."""
    if isinstance(r, list) and len(r) == 5:
        return (r[0], r[1], r[2], r[3], r[4])
    return ("?", None, "a snapshot row", repr(r)[:40], 0)


class MlflowDecoder(Whole):
    """The rows of one MLflow run in, records out (whole: the run's rows each time).

    Two rows for one key and step with different values are a conflict (MLflow keeps both). A
    run whose status says it ended (FINISHED, FAILED, KILLED) is complete: its last step goes
    out, then an "end" (FINISHED) or "error" Event at that step, as the engine's own log ends.

    An eval value that is not a number is kept as what it is (the probe's `not_numbers`,
    counted in the grouper's `odd_values`): which key, step and value it was is a probe's
    value, said through the evidence gate (core/log/oddvalues.py), never in a notice. A train
    value that is not a number is counted among the unreadable entries."""

    kind = "mlflow"

    def feed_rows(
        self, rows: Iterable[RawRow], status: str = "", end_ms: float = NAN
    ) -> list[Record]:
        self.clear_bad()
        checked: list[Row] = []
        for raw in rows:
            row = check_row(raw)
            if isinstance(row, str):
                self.note_bad("metrics", row)
                continue
            step, when, key, value = row
            if isinstance(value, str) and not self.fields.is_eval(key):  # a train value
                self.note_bad("metrics", f"{key} at step {step}: {value}, not a number")
                continue
            checked.append((step, when, {key: value}))
        out = self.group([checked])
        self.backwards = backwards_per_key(checked)
        event = ENDS.get(status)
        if event is not None:
            last = max((r[0] for r in checked), default=0)
            out += self.settle()
            out += self._new([Event(last, end_ms / 1000.0, event, f"MLflow run status {status}")])
        return out

    def feed(self, data: bytes) -> list[Record]:
        raise FormatError("an MLflow store is read as rows (feed_rows), not bytes")


def backwards_per_key(rows: Iterable[Row]) -> int:
    """The rows whose step goes back within their own key, in the order read.

    A file store holds one file per metric, each in the order it was logged: a metric read
    after another that went further is no step going back; a step logged again below its own
    metric's last one (a resume from an earlier step) is."""
    back, top = 0, dict[str, int]()
    for step, _, values in rows:
        for key in values:
            if step < top.get(key, -1):
                back += 1
            top[key] = max(top.get(key, -1), step)
    return back


def is_file_store(store: Path) -> bool:
    """Whether `store` is a file store (`mlruns/`): a folder, never one named `mlflow.db`.

    A folder under the SQLite store's name is not read as an empty file store: its open
    refuses it as not a regular file, as it refuses a FIFO there."""
    return store.is_dir() and store.name != SQLITE_STORE


def store_files(store: Path, run: RunInfo) -> list[Path]:
    """The files a write to `run` changes.

    They are the SQLite store and its journals, or the run's meta.yaml and metric files in a
    file store (a new metric's file included)."""
    if not is_file_store(store):
        return [
            store,
            store.with_name(store.name + "-wal"),
            store.with_name(store.name + "-journal"),
        ]
    folder = store / run.experiment / run.run_id
    out = [folder / "meta.yaml", folder / "metrics"]
    for where, dirs, names in os.walk(folder / "metrics"):
        out += [Path(where) / d for d in sorted(dirs)] + [Path(where) / n for n in sorted(names)]
    return out


def run_rows(store: Path, options: Mapping[str, str]) -> tuple[RunInfo, list[RawRow]]:
    """Every row of the chosen run of a store: `mlruns/` or `mlflow.db`."""
    exp, run = options.get("experiment", ""), options.get("run", "")
    if is_file_store(store):
        info = choose(file_store_runs(store), str(store), exp, run)
        return info, file_store_rows(store, info)
    db = connect(store)
    try:
        info = choose(sqlite_runs(db), str(store), exp, run)
        return info, sqlite_rows(db, info)
    finally:
        db.close()
