"""A real MLflow SQLite store held locked by another process reads as locked (one line,
exit 2), never as "not an MLflow store", and is refused within the busy wait; one that a
writer left mid-transaction (a hot rollback journal beside it) says so, not "readonly"."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core import limits
from tests.core.log.formats.conftest import foreign_preset


def test_a_locked_store_is_called_locked(tmp_path: Path, capsys, monkeypatch) -> None:
    mlflow = pytest.importorskip("mlflow")
    folder = tmp_path / "run"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)  # mlflow's artifacts go beside, not into the checkout
    mlflow.set_tracking_uri(f"sqlite:///{folder / 'mlflow.db'}")
    with mlflow.start_run(run_name="only"):
        for step in (40, 80):
            mlflow.log_metric("eval/chunk_mae", 1.0 + step / 100, step=step)
    preset = foreign_preset(tmp_path, 'kind = "mlflow"')
    assert main(["verdict", str(folder), "--preset", str(preset)]) in (0, 3, 4)
    capsys.readouterr()
    writer = sqlite3.connect(folder / "mlflow.db", isolation_level=None)
    try:
        if writer.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
            pytest.skip("a WAL store never blocks its readers")
        writer.execute("BEGIN EXCLUSIVE")  # as a writer mid-commit holds it
        assert main(["verdict", str(folder), "--preset", str(preset)]) == 2
    finally:
        writer.close()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "locked by another process" in err and "not an MLflow store" not in err, err
    assert "mlflow.db" in err, err


def mlflow_store(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """A run folder whose mlflow.db MLflow wrote (one run, two eval steps), and its preset."""
    mlflow = pytest.importorskip("mlflow")
    folder = tmp_path / "run"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)  # mlflow's artifacts go beside, not into the checkout
    mlflow.set_tracking_uri(f"sqlite:///{folder / 'mlflow.db'}")
    with mlflow.start_run(run_name="only"):
        for step in (40, 80):
            mlflow.log_metric("eval/chunk_mae", 1.0 + step / 100, step=step)
    return folder, foreign_preset(tmp_path, 'kind = "mlflow"')


# a second process that writes to the store: it changes the metrics and adds a table, past a
# one-page cache (so pages reach the file, their old bytes in mlflow.db-journal), says
# "ready", then holds the transaction open until it is killed
WRITER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
db.execute("PRAGMA cache_size = 1")
db.execute(sys.argv[2])
if sys.argv[2] == "BEGIN":
    db.execute("UPDATE metrics SET value = value + 1")
    db.execute("CREATE TABLE filler (x)")
    db.executemany("INSERT INTO filler VALUES (?)", [("x" * 500,)] * 2000)
print("ready", flush=True)
time.sleep(120)
"""


def writer(store: Path, begin: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store), begin], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_a_store_left_mid_transaction_says_a_writer_must_roll_it_back(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    folder, preset = mlflow_store(tmp_path, monkeypatch)
    capsys.readouterr()
    proc = writer(folder / "mlflow.db", "BEGIN")
    proc.kill()  # the writer dies mid-transaction: its journal is left hot
    proc.wait()
    journal = folder / "mlflow.db-journal"
    assert journal.stat().st_size > 0
    before = (folder / "mlflow.db").read_bytes(), journal.read_bytes()
    assert main(["verdict", str(folder), "--preset", str(preset)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "mlflow.db: " in err and "readonly" not in err, err
    assert "unfinished write" in err and "hot journal" in err and "roll" in err, err
    # the reader changed nothing: the journal is a writer's to roll back
    assert ((folder / "mlflow.db").read_bytes(), journal.read_bytes()) == before
    sqlite3.connect(folder / "mlflow.db").execute("SELECT count(*) FROM metrics").fetchall()
    assert not journal.exists()  # a writer's open rolled it back, as the line says
    assert main(["verdict", str(folder), "--preset", str(preset)]) in (0, 3, 4)


def test_a_store_held_exclusive_by_another_process_is_refused_within_2_s(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    folder, preset = mlflow_store(tmp_path, monkeypatch)
    assert main(["verdict", str(folder), "--preset", str(preset)]) in (0, 3, 4)  # imports done
    capsys.readouterr()
    proc = writer(folder / "mlflow.db", "BEGIN EXCLUSIVE")
    try:
        start = time.monotonic()
        assert main(["verdict", str(folder), "--preset", str(preset)]) == 2
        took = time.monotonic() - start
    finally:
        proc.kill()
        proc.wait()
    err = capsys.readouterr().err
    assert "locked by another process" in err and err.count("\n") == 1, err
    assert took < 2.0, took  # the target for refusing a hostile input (docs/limits.md)
    assert took >= limits.SQLITE_BUSY_S  # the writer was waited for, as long as the bound says
