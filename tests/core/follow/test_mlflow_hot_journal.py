"""An MLflow SQLite store a writer left mid-transaction (its rollback journal hot beside it),
or one holding a view, followed here and over the real sshd: both say the same one line
(core/limits.py's), the SSH one naming the host's file, never SQLite's raw "attempt to write a
readonly database" nor the reader's exit status."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.log.formats.source import SourceSpec
from tests.core.log.formats.test_mlflow_locked import mlflow_store, writer
from tests.sshd_helper import HOST_ALIAS

pytestmark = pytest.mark.ssh
pytest.importorskip("sqlalchemy")


async def first_note(run: ForeignRun, timeout: float = 30.0) -> str:
    """The first note the follow says."""

    async def go() -> str:
        async for batch in run.follow():
            if batch.note:
                return batch.note
        return ""

    try:
        return await asyncio.wait_for(go(), timeout)
    finally:
        await run.close()


async def test_a_hot_journal_over_ssh_says_the_local_line(sshd, tmp_path: Path, monkeypatch):
    folder, _ = mlflow_store(tmp_path, monkeypatch)
    proc = writer(folder / "mlflow.db", "BEGIN")
    proc.kill()  # the writer dies mid-transaction: its journal is left hot
    proc.wait()
    journal = folder / "mlflow.db-journal"
    assert journal.stat().st_size > 0
    before = (folder / "mlflow.db").read_bytes(), journal.read_bytes()

    here = await first_note(ForeignRun(folder, SourceSpec("mlflow")))
    assert here.startswith("waiting: ") and "hot journal" in here, here
    words = here.removeprefix("waiting: ")

    started = time.monotonic()
    there = await first_note(over_ssh(sshd, folder))
    assert there == f"waiting: {HOST_ALIAS}:{folder}/mlflow.db: {words}", there
    assert "\n" not in there and "readonly" not in there and "Error" not in there, there
    assert time.monotonic() - started < 20  # said at the first read, never a timeout
    # neither read changed anything: the journal is a writer's to roll back
    assert ((folder / "mlflow.db").read_bytes(), journal.read_bytes()) == before


def over_ssh(sshd, folder: Path) -> ForeignRun:
    from fontaine_tui.core.follow.ssh import SshRun
    from fontaine_tui.core.ssh.destination import SshTarget

    ssh = SshRun(SshTarget(HOST_ALIAS, str(folder)), ssh_options=sshd.ssh_options)
    return ForeignRun(str(folder), SourceSpec("mlflow"), transport=ssh)


async def test_a_view_over_ssh_says_the_local_line(sshd, tmp_path: Path, monkeypatch):
    folder, _ = mlflow_store(tmp_path, monkeypatch)
    db = sqlite3.connect(folder / "mlflow.db")
    db.execute("CREATE VIEW latest AS SELECT * FROM metrics")
    db.commit()
    db.close()
    here = await first_note(ForeignRun(folder, SourceSpec("mlflow")))
    assert here.startswith("waiting: holds a view (latest); refused"), here
    words = here.removeprefix("waiting: ")
    there = await first_note(over_ssh(sshd, folder))
    assert there == f"waiting: {HOST_ALIAS}:{folder}/mlflow.db: {words}", there
