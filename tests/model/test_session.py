"""The console model's ledger: prereg.json and amendments.jsonl read from the folder or
through the source, errors naming the real file (never a scratch copy)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import Batch
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.ledger import declare_amendment
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.model.session import Session
from tests.logs import dumps, records


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
    # the reads shown, then the end as `verdict` ends on a broken ledger: exit 2 naming it
    with pytest.raises(InputError, match="its content does not match its hash"):
        asyncio.run(PlainReport(Session(ReplayRun(log), demosonly, "replay"), out).follow())
    warnings = [ln for ln in out.getvalue().splitlines() if ln.startswith("WARNING: ")]
    assert warnings == [
        f"WARNING: {ledger}:1: its content does not match its hash (edited); "
        "amendments from line 1 on are not applied"
    ]
    assert out.getvalue().count("verdict: ") == 4


def test_a_level_read_s_scale_is_checked_against_the_first_probe_the_log_shows(tmp_path, raw_only):
    """The console's checks follow the log: a level read's scale counts only if declared
    before the first probe the log shows (here at step 50, before the eval_every of 250), and a
    first probe that arrives after the checks were made makes them again."""
    path = tmp_path / "level.toml"
    path.write_text(
        Path(raw_only.path).read_text().replace("[verdict]\n", '[verdict]\nread = "level"\n', 1)
    )
    preset = load_preset(path)
    root = tmp_path / "run"
    root.mkdir()
    freeze(RunFolder(root), preset, ["launch"], "here", now=1_700_000_000)
    declare_amendment(RunFolder(root), factor=1.25, last_step_seen=100, preset=preset)
    session = Session(LocalRun(root), preset, "attach")
    asyncio.run(session.read_ledger())
    recs = records(probes={50: (3.4, 3.6)})
    lines = [dumps(r).encode() for r in recs if r["step"] <= 100]
    cut = next(i for i, r in enumerate(recs) if r["step"] == 40 and r["kind"] == "train")
    session.apply(Batch(lines[: cut + 1], 1))  # no probe yet: the first is expected at 250
    assert [c.status for c in session.latest().amendments] == ["applied"]
    session.apply(Batch(lines[cut + 1 :], cut + 2))  # the probe at 50
    [check] = session.latest().amendments
    assert (check.status, check.reason) == (
        "refused",
        "declared after step 100 was seen; a scale amendment must be declared before step 50 "
        "(the first probe)",
    )
