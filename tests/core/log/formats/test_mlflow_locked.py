"""A real MLflow SQLite store held locked by another process reads as locked (one line,
exit 2), never as "not an MLflow store"."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fontaine_tui.cli import main
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
