"""An MLflow SQLite store whose columns compute their values on every read (a virtual
generated column, a virtual table) is refused at open, in one line with exit 2, within 2 s; and what a
read may hold in memory (a sort's temporary space included) is bounded, a read past it said
in one line, never a MemoryError."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core import limits
from fontaine_tui.core.errors import InputError
from tests.core.log.formats.conftest import foreign_preset

REJECT_S = 2.0  # each hostile store is refused within this


def hostile_store(path: Path, metrics: str, width: int = 1_000_000, rows: int = 40) -> None:
    """MLflow's three tables, `metrics` as `metrics` says, holding `rows` rows of one run."""
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE experiments (experiment_id INTEGER, name TEXT);"
        "INSERT INTO experiments VALUES (0, 'Default');"
        "CREATE TABLE runs (run_uuid TEXT, name TEXT, experiment_id INTEGER, status TEXT,"
        " end_time INTEGER, lifecycle_stage TEXT, start_time INTEGER);"
        "INSERT INTO runs VALUES ('r1', 'only', 0, 'FINISHED', 2000, 'active', 1000);"
        + metrics.replace("WIDTH", str(width))
    )
    db.executemany(
        "INSERT INTO metrics (k, value, timestamp, step, is_nan, run_uuid) "
        "VALUES (?, ?, ?, ?, 0, 'r1')",
        [("eval/chunk_mae", 1.0 + i / 100, 1000 + i, 10 * i) for i in range(rows)],
    )
    db.commit()
    db.close()


GENERATED = (
    "CREATE TABLE metrics (k TEXT, key TEXT GENERATED ALWAYS AS "
    "(k || printf('%.*c', WIDTH, ' ')) {kind}, value REAL, timestamp INTEGER, step INTEGER,"
    " is_nan INTEGER, run_uuid TEXT);"
)


def test_a_virtual_generated_column_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    hostile_store(folder / "mlflow.db", GENERATED.format(kind="VIRTUAL"))
    preset = foreign_preset(tmp_path, 'kind = "mlflow"')
    start = time.monotonic()
    code = main(["verdict", str(folder), "-p", str(preset)])
    took = time.monotonic() - start
    err = capsys.readouterr().err
    assert "mlflow.db" in err and "virtual generated column (metrics.key)" in err, err[:300]
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert took < REJECT_S, took


def test_a_stored_generated_column_is_read(tmp_path: Path) -> None:
    """As MLflow's own `spans.duration_ns`: computed when the row was written, stored."""
    store = tmp_path / "mlflow.db"
    hostile_store(store, GENERATED.format(kind="STORED"), width=1)
    db = limits.open_sqlite(store)
    assert db.execute("SELECT key FROM metrics LIMIT 1").fetchall() == [("eval/chunk_mae ",)]


def test_a_virtual_table_is_refused_at_once(tmp_path: Path) -> None:
    store = tmp_path / "mlflow.db"
    db = sqlite3.connect(store)
    db.executescript("CREATE VIRTUAL TABLE metrics USING fts5(key, value);")
    db.close()
    start = time.monotonic()
    with pytest.raises(InputError, match=r"holds a virtual table \(metrics"):
        limits.open_sqlite(store)
    assert time.monotonic() - start < REJECT_S


# a reader, in a process of its own (SQLite's heap limit is the process's), that reads a store
# of 40 rows of 1 MiB keys sorted by key, with the heap bound lowered to 8 MiB
HEAP_READER = """
import sys
from pathlib import Path
from fontaine_tui.core import limits
limits.SQLITE_HEAP = 8 * 2**20
db = limits.open_sqlite(Path(sys.argv[1]))
try:
    rows = db.execute("SELECT key FROM metrics ORDER BY key, step").fetchall()
except limits.SqliteError as exc:
    print("refused:", limits.sqlite_refusal(exc))
else:
    print("read", len(rows))
"""


def test_a_read_past_the_heap_bound_is_refused_in_one_line(tmp_path: Path) -> None:
    store = tmp_path / "mlflow.db"
    hostile_store(
        store,
        "CREATE TABLE metrics (k TEXT, key TEXT, value REAL, timestamp INTEGER, step INTEGER,"
        " is_nan INTEGER, run_uuid TEXT);"
        "CREATE TRIGGER pad AFTER INSERT ON metrics BEGIN UPDATE metrics SET key = "
        "new.k || printf('%.*c', WIDTH, ' ') WHERE rowid = new.rowid; END;",
        width=2**20,
    )
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", HEAP_READER, str(store)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert time.monotonic() - start < 10 * REJECT_S
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith("refused: a read needs more than 8 MiB of memory"), done.stdout
