"""The end of a hash chain is recorded beside it: a removed last line (or a whole ledger) is
named, a whole last line without its newline is read, and two reviewers appending at once
(real processes) leave a trail that verifies."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.verdict import review
from fontaine_tui.core.verdict.ledger import declare_amendment, read_amendments, read_ledger
from fontaine_tui.core.verdict.rules import compute_verdict
from tests.console.conftest import make_run
from tests.core.launch.conftest import without_amendments
from tests.core.verdict.test_ledger_chain import three

ROOT = Path(__file__).parents[3]


def head_path(chain: Path) -> Path:
    return chain.with_name(chain.name + ".head")


def _verdict_cli(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "verdict", str(folder)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_a_removed_last_amendment_is_named_and_the_verdict_refuses(tmp_path):
    folder, lines = three(tmp_path)
    before = _verdict_cli(folder.root)
    folder.amendments.write_bytes(b"".join(lines[:2]))  # the last declaration removed
    read = read_ledger(folder)
    assert "holds 2 line(s) but 3 were recorded" in read.broken, read.broken
    with pytest.raises(InputError, match="amendments.jsonl: holds 2 line"):
        read_amendments(folder)
    res = _verdict_cli(folder.root)
    assert before.returncode != 2, before.stderr
    assert res.returncode == 2 and res.stderr.count("\n") == 1, (res.stdout, res.stderr)
    assert "amendments.jsonl" in res.stderr and "3 were recorded" in res.stderr


def test_a_removed_ledger_with_its_head_kept_is_named(tmp_path):
    folder, _ = three(tmp_path)
    folder.amendments.unlink()
    res = _verdict_cli(folder.root)
    assert res.returncode == 2 and "holds 0 line(s) but 3 were recorded" in res.stderr


def test_a_removed_head_with_marked_lines_is_named(tmp_path):
    folder, lines = three(tmp_path)
    head_path(folder.amendments).unlink(missing_ok=True)
    folder.amendments.write_bytes(b"".join(lines[:2]))
    assert "amendments.jsonl.head is kept, but it is missing" in read_ledger(folder).broken


def test_a_whole_last_line_without_its_newline_is_read_and_appended_to(tmp_path):
    folder, lines = three(tmp_path)
    folder.amendments.write_bytes(b"".join(lines)[:-1])  # only the final newline removed
    assert [a.factor for a in read_amendments(folder)] == [1.5, 2.0, 2.5]
    declare_amendment(
        folder, factor=3.0, last_step_seen=400, preset=load_preset(without_amendments(tmp_path))
    )
    assert [a.factor for a in read_amendments(folder)] == [1.5, 2.0, 2.5, 3.0]
    assert folder.amendments.read_bytes().count(b"\n") == 4


def test_a_ledger_from_before_heads_still_reads(tmp_path):
    folder, lines = three(tmp_path)
    prev = hashlib.sha256(folder.prereg.read_bytes()).hexdigest()
    old = []
    for raw in lines:  # the same chain, written as before heads were kept
        doc = json.loads(raw)
        doc.pop("hash"), doc.pop("head", None)
        doc["prev"] = prev
        doc["hash"] = hashlib.sha256(
            json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
        line = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
        prev = hashlib.sha256(line).hexdigest()
        old.append(line + b"\n")
    folder.amendments.write_bytes(b"".join(old))
    head_path(folder.amendments).unlink(missing_ok=True)
    assert [a.factor for a in read_amendments(folder)] == [1.5, 2.0, 2.5]
    assert _verdict_cli(folder.root).returncode != 2


def _reviewer(path: str, verdict, n: int) -> None:
    for i in range(n):
        review.append(path, ("accept", "flag", "note")[i % 3], verdict, note=f"{i}")


@pytest.fixture(scope="module")
def verdict(tmp_path_factory):
    run = make_run(tmp_path_factory.mktemp("v") / "run", upto=500)
    return compute_verdict(load_log(run), load_preset("demosonly_1gpu"))


def test_concurrent_reviewers_leave_a_trail_that_verifies(tmp_path, verdict):
    path = tmp_path / "review.jsonl"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_reviewer, args=(str(path), verdict, 40)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 4
    check = review.verify(path)
    assert check == review.ChainCheck(160), check


def test_a_removed_last_review_is_named_and_a_missing_newline_is_not(tmp_path, verdict):
    path = tmp_path / "review.jsonl"
    for action in ("accept", "flag", "note"):
        review.append(path, action, verdict)
    data = path.read_bytes()
    path.write_bytes(data[:-1])
    assert review.verify(path) == review.ChainCheck(3)
    review.append(path, "accept", verdict)
    assert review.verify(path) == review.ChainCheck(4)
    cut = b"".join(path.read_bytes().splitlines(keepends=True)[:3])
    path.write_bytes(cut)
    check = review.verify(path)
    assert not check.ok and "holds 3 line(s) but 4 were recorded" in check.reason
