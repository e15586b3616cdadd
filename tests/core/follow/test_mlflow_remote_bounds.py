"""An MLflow SQLite store read on another host (over the real sshd on 127.0.0.1) is held to
the bounds a store read here is (core/limits.py's `open_sqlite`): one holding a virtual
generated column or a virtual table is refused in the words said of it here, and a read that
needs more memory than SQLITE_HEAP is stopped and said, not read on the host unbounded."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from fontaine_tui.core import limits
from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.log.formats.source import SourceSpec
from tests.core.log.formats.test_mlflow_generated import GENERATED, hostile_store
from tests.sshd_helper import HOST_ALIAS

pytestmark = pytest.mark.ssh


async def first_note(run: ForeignRun, timeout: float = 30.0) -> str:
    """The first note the follow says ("" when it reads without one)."""

    async def go() -> str:
        async for batch in run.follow():
            if batch.note:
                return batch.note
            if batch.records:
                return ""
        return ""

    try:
        return await asyncio.wait_for(go(), timeout)
    finally:
        await run.close()


def over_ssh(sshd, folder: Path) -> ForeignRun:
    from fontaine_tui.core.follow.ssh import SshRun
    from fontaine_tui.core.ssh.destination import SshTarget

    ssh = SshRun(SshTarget(HOST_ALIAS, str(folder)), ssh_options=sshd.ssh_options)
    return ForeignRun(str(folder), SourceSpec("mlflow"), transport=ssh)


def run_with(tmp_path: Path, metrics: str, width: int = 10) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    hostile_store(folder / "mlflow.db", metrics, width=width)
    return folder


async def test_a_virtual_generated_column_over_ssh_says_the_local_line(sshd, tmp_path: Path):
    folder = run_with(tmp_path, GENERATED.format(kind="VIRTUAL"))
    here = await first_note(ForeignRun(folder, SourceSpec("mlflow")))
    assert "virtual generated column (metrics.key)" in here, here
    words = here.removeprefix("waiting: ")
    started = time.monotonic()
    there = await first_note(over_ssh(sshd, folder))
    assert there == f"waiting: {HOST_ALIAS}:{folder}/mlflow.db: {words}", there
    assert time.monotonic() - started < 20


async def test_a_stored_generated_column_over_ssh_is_read(sshd, tmp_path: Path):
    """As MLflow's own `spans.duration_ns`: computed when the row was written, stored."""
    folder = run_with(tmp_path, GENERATED.format(kind="STORED"))
    assert await first_note(over_ssh(sshd, folder)) == ""


async def test_a_virtual_table_over_ssh_says_the_local_line(sshd, tmp_path: Path):
    folder = run_with(tmp_path, GENERATED.format(kind="STORED"))
    db = sqlite3.connect(folder / "mlflow.db")
    db.execute("CREATE VIRTUAL TABLE notes USING fts5(body)")
    db.commit()
    db.close()
    here = await first_note(ForeignRun(folder, SourceSpec("mlflow")))
    assert "holds a virtual table (notes" in here, here
    words = here.removeprefix("waiting: ")
    there = await first_note(over_ssh(sshd, folder))
    assert there == f"waiting: {HOST_ALIAS}:{folder}/mlflow.db: {words}", there


async def test_a_read_past_the_heap_bound_over_ssh_is_said(sshd, tmp_path: Path, monkeypatch):
    """40 rows of 1 MiB keys, sorted by the host's reader, with the bound lowered to 8 MiB.

    Only the host's reader runs under the lowered bound (its own process): SQLite's heap limit
    is the whole process's, and this one is never lowered."""
    folder = run_with(
        tmp_path,
        "CREATE TABLE metrics (k TEXT, key TEXT, value REAL, timestamp INTEGER, step INTEGER,"
        " is_nan INTEGER, run_uuid TEXT);"
        "CREATE TRIGGER pad AFTER INSERT ON metrics BEGIN UPDATE metrics SET key = "
        "new.k || printf('%.*c', WIDTH, ' ') WHERE rowid = new.rowid; END;",
        width=2**20,
    )
    monkeypatch.setattr(limits, "SQLITE_HEAP", 8 * 2**20)
    there = await first_note(over_ssh(sshd, folder))
    assert there == (
        f"waiting: {HOST_ALIAS}:{folder}/mlflow.db: a read needs more than 8 MiB of memory "
        "(SQLITE_HEAP) and was stopped; refused"
    ), there
