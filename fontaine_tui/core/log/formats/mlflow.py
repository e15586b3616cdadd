"""MLflow's two local stores, read without MLflow: the file store (`mlruns/<experiment>/<run>/
metrics/<key>`, one `timestamp value step` line per logged value; a key with `/` is a
nested folder) and the SQLite store (`mlflow.db`, MLflow's default; its `metrics`, `runs` and
`experiments` tables), opened read-only so a writer is never disturbed.

Both are whole reads (`rows(...)` returns every (step, time, key, value) of the run); the
store is small next to a training run and re-read when it changes.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core.log.formats.base import FieldMap, Grouper
from fontaine_tui.core.log.formats.rows import FormatError
from fontaine_tui.core.log.records import Record

NAN = float("nan")
FILE_STORE = "mlruns"
SQLITE_STORE = "mlflow.db"


@dataclass(frozen=True, slots=True)
class RunInfo:
    run_id: str
    name: str
    experiment: str  # the experiment's id
    experiment_name: str

    def describe(self) -> str:
        return f"{self.run_id[:12]} ({self.name or 'unnamed'}, experiment {self.experiment_name})"


def _meta(path: Path) -> dict[str, str]:
    """An MLflow meta.yaml's top-level `key: value` lines (enough for ids and names)."""
    out: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
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
        if emeta.get("lifecycle_stage") == "deleted":
            continue
        for run in sorted(p for p in exp.iterdir() if (p / "metrics").is_dir()):
            rmeta = _meta(run / "meta.yaml")
            if rmeta.get("lifecycle_stage") == "deleted":
                continue
            runs.append(RunInfo(rmeta.get("run_id") or run.name, rmeta.get("run_name", ""),
                                exp.name, emeta.get("name", exp.name)))
    return runs


def file_store_rows(root: Path, run: RunInfo) -> list[tuple[int, float, str, float]]:
    metrics = root / run.experiment / run.run_id / "metrics"
    out = []
    for folder, _, files in os.walk(metrics):
        for name in files:
            path = Path(folder) / name
            key = path.relative_to(metrics).as_posix()
            with open(path, "rb") as f:
                for line in f:
                    parts = line.split()
                    if len(parts) < 2:
                        continue  # a line being written
                    try:
                        ts, value = int(parts[0]), float(parts[1])
                        step = int(parts[2]) if len(parts) > 2 else 0
                    except ValueError:
                        continue
                    out.append((step, ts / 1000.0, key, value))
    out.sort(key=lambda r: (r[0], r[1]))
    return out


def connect(path: Path) -> sqlite3.Connection:
    """The SQLite store, read-only (a writer holding it is never blocked or changed)."""
    try:
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=2.0)
    except sqlite3.Error as exc:
        raise FormatError(f"cannot open read-only ({exc})") from None


def sqlite_runs(db: sqlite3.Connection) -> list[RunInfo]:
    try:
        rows = db.execute(
            "SELECT r.run_uuid, r.name, r.experiment_id, e.name FROM runs r JOIN experiments e "
            "ON r.experiment_id = e.experiment_id WHERE r.lifecycle_stage = 'active' "
            "ORDER BY r.start_time").fetchall()
    except sqlite3.Error as exc:
        raise FormatError(f"not an MLflow store ({exc})") from None
    return [RunInfo(str(a), str(b or ""), str(c), str(d)) for a, b, c, d in rows]


def sqlite_rows(db: sqlite3.Connection, run: RunInfo) -> list[tuple[int, float, str, float]]:
    try:
        rows = db.execute("SELECT step, timestamp, key, value, is_nan FROM metrics "
                          "WHERE run_uuid = ? ORDER BY step, timestamp", (run.run_id,))
        return [(int(s), t / 1000.0, str(k), NAN if n else float(v)) for s, t, k, v, n in rows]
    except sqlite3.Error as exc:
        raise FormatError(f"cannot read the metrics table ({exc})") from None


def choose(runs: list[RunInfo], where: str, experiment: str = "", run: str = "") -> RunInfo:
    """The run the options name (experiment by id or name, run by id, id prefix or name),
    or the only one; else FormatError listing them."""
    found = [r for r in runs if not experiment or experiment in (r.experiment,
                                                                  r.experiment_name)]
    if run:
        found = [r for r in found if r.run_id.startswith(run) or r.name == run]
    if len(found) == 1:
        return found[0]
    chose = " ".join(x for x in (f"experiment={experiment!r}" if experiment else "",
                                 f"run={run!r}" if run else "") if x) or "none chosen"
    if not found:
        return _fail(where, f"no run matches ({chose}); runs: "
                     + (", ".join(r.describe() for r in runs[:8]) or "none"))
    return _fail(where, f"{len(found)} runs and {chose}: set [source] run to one of "
                 + ", ".join(r.describe() for r in found[:8]))


def _fail(where: str, why: str) -> RunInfo:
    raise FormatError(f"{where}: {why}")


def snapshot_rows(doc: Mapping[str, object], where: str, options: Mapping[str, str]
                  ) -> tuple[RunInfo, list[tuple[int, float, str, float]]]:
    """The chosen run's rows from a store snapshot read on another host (SshRun.mlflow_snapshot:
    {"runs": [[id, name, experiment id, experiment name]], "rows": {id: [[step, ms, key,
    value, is_nan]]}})."""
    raw_runs = doc.get("runs")
    runs = [RunInfo(str(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in
            (raw_runs if isinstance(raw_runs, list) else []) if isinstance(r, list) and len(r) == 4]
    info = choose(runs, where, options.get("experiment", ""), options.get("run", ""))
    table = doc.get("rows")
    rows = table.get(info.run_id, []) if isinstance(table, dict) else []
    out = []
    for r in rows if isinstance(rows, list) else []:
        try:
            s, t, k, v, n = r
            out.append((int(s), float(t) / 1000.0, str(k), NAN if n else float(v)))
        except (TypeError, ValueError):
            continue
    return info, out


class MlflowDecoder:
    """The rows of one MLflow run in, records out (whole: the run's rows each time)."""

    kind = "mlflow"
    whole = True

    def __init__(self, fields: FieldMap | None = None) -> None:
        self.grouper = Grouper(fields or FieldMap())
        self._held = -1

    def feed_rows(self, rows: Iterable[tuple[int, float, str, float]]) -> list[Record]:
        out: list[Record] = []
        add = self.grouper.add
        for step, time, key, value in rows:
            if step < self._held or step <= self.grouper.emitted:
                continue
            add(step, time, key, value, out)
            self._held = step
        return out

    def feed(self, data: bytes) -> list[Record]:
        raise FormatError("an MLflow store is read as rows (feed_rows), not bytes")

    def finish(self) -> list[Record]:
        out: list[Record] = []
        self.grouper.flush(out)
        return out


def run_rows(store: Path, options: Mapping[str, str]) -> tuple[RunInfo, list[tuple[int, float,
                                                                                  str, float]]]:
    """Every row of the chosen run of a store: `mlruns/` or `mlflow.db`."""
    exp, run = options.get("experiment", ""), options.get("run", "")
    if store.is_dir():
        info = choose(file_store_runs(store), str(store), exp, run)
        return info, file_store_rows(store, info)
    db = connect(store)
    try:
        info = choose(sqlite_runs(db), str(store), exp, run)
        return info, sqlite_rows(db, info)
    finally:
        db.close()
