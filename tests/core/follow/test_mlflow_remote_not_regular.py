"""An MLflow SQLite store on another host (over the real sshd on 127.0.0.1) that is not a
regular file (a FIFO or a folder named mlflow.db), or beside which SQLite would open a FIFO
(-journal, -wal, -shm: its hot-journal check on every open), is refused at the first read in
the one line said of the same store here, the host's file named: never a read held until the
command's timeout, never a python3 left waiting on the host in an open of the FIFO."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.log.formats.source import SourceSpec
from tests.core.follow.test_mlflow_hot_journal import first_note, over_ssh
from tests.core.follow.test_ssh_special_log import settled
from tests.core.log.formats.test_mlflow_locked import mlflow_store
from tests.sshd_helper import HOST_ALIAS

pytestmark = pytest.mark.ssh
FIFO = "a FIFO (named pipe)"


async def same_line_there(sshd, folder: Path) -> str:
    """The note said over SSH, checked against the one said here; returns the words."""
    here = await first_note(ForeignRun(folder, SourceSpec("mlflow")), timeout=20)
    assert here.startswith("waiting: "), here
    words = here.removeprefix("waiting: ").removeprefix(f"{folder}/mlflow.db: ")
    started = time.monotonic()
    there = await first_note(over_ssh(sshd, folder), timeout=30)
    assert there == f"waiting: {HOST_ALIAS}:{folder}/mlflow.db: {words}", there
    assert time.monotonic() - started < 20  # said at the first read, never a timeout
    assert settled(folder) == []  # no reader left on the host
    return words


@pytest.mark.parametrize("kind", ["fifo", "folder"])
async def test_a_store_that_is_not_a_regular_file_over_ssh(sshd, tmp_path: Path, kind):
    folder = tmp_path / "run"
    folder.mkdir()
    if kind == "fifo":
        os.mkfifo(folder / "mlflow.db")
    else:
        (folder / "mlflow.db").mkdir()
    words = await same_line_there(sshd, folder)
    shown = FIFO if kind == "fifo" else "a folder"
    assert words == (
        f"not a regular file ({shown}); refused: reading it could wait or run forever"
    ), words


@pytest.mark.parametrize("side", ["-journal", "-wal", "-shm"])
async def test_a_fifo_beside_the_store_over_ssh(sshd, tmp_path: Path, monkeypatch, side):
    pytest.importorskip("sqlalchemy")
    folder, _ = mlflow_store(tmp_path, monkeypatch)
    os.mkfifo(folder / f"mlflow.db{side}")
    words = await same_line_there(sshd, folder)
    assert words == (
        f"mlflow.db{side} beside it is not a regular file ({FIFO}); refused: SQLite opens "
        "it, and the open could wait forever"
    ), words
