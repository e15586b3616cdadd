"""The console model's ledger: prereg.json and amendments.jsonl read from the folder or
through the source, errors naming the real file (never a scratch copy)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.ledger import declare_amendment
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.model.session import Session


class FolderOverWire:
    """A run source with no local folder (as an SSH run is): files come from read_bytes."""

    def __init__(self, root: Path) -> None:
        self.root, self.label = root, f"gpu-box:{root}"

    def follow(self, name: str = "train_log.jsonl"):
        return LocalRun(self.root).follow(name)

    async def read_bytes(self, name: str) -> bytes | None:
        path = self.root / name
        return path.read_bytes() if path.is_file() else None

    async def close(self) -> None:
        pass


def _run(tmp_path: Path, preset, ledger: bytes) -> Path:
    root = tmp_path / "run"
    root.mkdir()
    freeze(RunFolder(root), preset, ["launch"], "here", now=1_700_000_000)
    (root / "amendments.jsonl").write_bytes(ledger)
    return root


def test_a_bad_ledger_line_is_named_by_its_real_path(tmp_path, demosonly):
    root = _run(tmp_path, demosonly, b'{"id": 1}\nnot json\n')
    session = Session(LocalRun(root), demosonly, "attach")
    asyncio.run(session.read_ledger())
    assert session.ledger.error.startswith(f"{root}/amendments.jsonl:1: no hash")
    assert session.ledger.hash_ok is True and session.ledger.launched_at


def test_the_ledger_over_the_wire_is_read_from_bytes_and_named_by_the_source(tmp_path, demosonly):
    root = _run(tmp_path, demosonly, b"")
    declare_amendment(RunFolder(root), factor=1.5, last_step_seen=100, preset=demosonly)
    with open(root / "amendments.jsonl", "ab") as fh:
        fh.write(b"{torn")
    session = Session(FolderOverWire(root), demosonly, "attach")
    assert session.folder is None
    asyncio.run(session.read_ledger())
    assert session.ledger.error == ""
    assert [(a.id, a.factor, a.declared_before_step) for a in session.ledger.amendments] == [
        (2, 1.5, 101)
    ]  # id 1 is the preset's own amendment
    assert session.ledger.hash_ok is True

    (root / "amendments.jsonl").write_bytes(b"[1, 2]\n")
    asyncio.run(session.read_ledger())
    assert session.ledger.error == (
        f"gpu-box:{root}/amendments.jsonl:1: expected a JSON "
        "object; amendments from line 1 on are not applied"
    )


def test_a_tampered_prereg_is_reported_against_the_source(tmp_path, demosonly):
    root = _run(tmp_path, demosonly, b"")
    doc = json.loads((root / "prereg.json").read_text())
    doc["preset"]["verdict"]["reference"] = "someone-else"
    (root / "prereg.json").write_text(json.dumps(doc))
    session = Session(FolderOverWire(root), demosonly, "attach")
    asyncio.run(session.read_ledger())
    assert session.ledger.hash_ok is False
    assert session.ledger.hash_status.startswith(f"gpu-box:{root}/prereg.json: "), (
        session.ledger.hash_status
    )


def test_the_plain_report_says_a_ledger_break_once(tmp_path, demosonly):
    import io

    from fontaine_tui.core.follow.replay import ReplayRun
    from fontaine_tui.model.plain import PlainReport
    from tests.logs import RIGONLY_LIKE, write_log

    root = _run(tmp_path, demosonly, b"")
    declare_amendment(RunFolder(root), factor=1.5, last_step_seen=100, preset=demosonly)
    ledger = root / "amendments.jsonl"
    ledger.write_bytes(ledger.read_bytes().replace(b'"factor":1.5', b'"factor":9.0'))
    log = write_log(root / "train_log.jsonl", probes=RIGONLY_LIKE)
    out = io.StringIO()
    asyncio.run(PlainReport(Session(ReplayRun(log), demosonly, "replay"), out).follow())
    warnings = [ln for ln in out.getvalue().splitlines() if ln.startswith("WARNING: ")]
    assert warnings == [
        f"WARNING: {ledger}:1: its content does not match its hash (edited); "
        "amendments from line 1 on are not applied"
    ]
    assert out.getvalue().count("verdict: ") == 4
