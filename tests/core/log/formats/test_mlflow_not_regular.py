"""An MLflow SQLite store that is not a regular file (a folder named mlflow.db), or one with
a file beside it that SQLite opens (-journal, -wal, -shm) and that is not a regular file (a
FIFO), is refused at once in one line, exit 2: never read as an empty file store, never a
`verdict` or `inspect` held forever in SQLite's open of the FIFO (its hot-journal check).

Each is a real `fontaine-tui` subprocess on a store MLflow wrote, under a timeout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.log.formats.test_mlflow_locked import mlflow_store

ROOT = Path(__file__).resolve().parents[4]


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=20,
    )


@pytest.mark.parametrize("side", ["-journal", "-wal", "-shm"])
@pytest.mark.parametrize("command", ["verdict", "inspect"])
def test_a_fifo_beside_the_store_is_refused_at_once(tmp_path, monkeypatch, side, command):
    folder, preset = mlflow_store(tmp_path, monkeypatch)
    os.mkfifo(folder / f"mlflow.db{side}")
    argv = [command, str(folder)] + (["--preset", str(preset)] if command == "verdict" else [])
    res = cli(*argv)
    assert res.returncode == 2, (res.returncode, res.stdout[-400:], res.stderr[-800:])
    assert res.stderr == (
        f"fontaine-tui: error: {folder}/mlflow.db: mlflow.db{side} beside it is not a regular "
        "file (a FIFO (named pipe)); refused: SQLite opens it, and the open could wait forever\n"
    )


@pytest.mark.parametrize("command", ["verdict", "inspect"])
def test_a_folder_named_mlflow_db_is_not_a_regular_file(tmp_path, command):
    folder = tmp_path / "run"
    (folder / "mlflow.db").mkdir(parents=True)
    (tmp_path / "foreign.toml").write_text(
        '[run]\nname = "foreign"\nquestion = "Does the eval error rise after step 40?"\n\n'
        '[source]\nkind = "mlflow"\n\n[verdict]\nmetric = "eval/chunk_mae"\nanchor_step = 40\n'
        "endpoint_step = 80\nhealthy_max = 0.3\ndrift_min = 1.0\n"
    )
    preset = tmp_path / "foreign.toml"
    argv = [command, str(folder)] + (["--preset", str(preset)] if command == "verdict" else [])
    res = cli(*argv)
    assert res.returncode == 2, (res.returncode, res.stdout[-400:], res.stderr[-800:])
    assert res.stderr == (
        f"fontaine-tui: error: {folder}/mlflow.db: not a regular file (a folder); refused: "
        "reading it could wait or run forever\n"
    )
