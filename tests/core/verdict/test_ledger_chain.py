"""amendments.jsonl as a hash chain from prereg.json: an edited, removed or reordered line is
found and named, and no amendment from it on is applied."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.ledger import declare_amendment, read_amendments, read_ledger
from fontaine_tui.core.verdict.prereg import freeze
from tests.core.launch.conftest import without_amendments
from tests.logs import RIGONLY_LIKE, write_log


def three(tmp_path: Path) -> tuple[RunFolder, list[bytes]]:
    preset = load_preset(without_amendments(tmp_path))
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    freeze(folder, preset, ["engine"], "h", now=1_800_000_000)
    for factor, seen in ((1.5, 100), (2.0, 200), (2.5, 300)):
        declare_amendment(folder, factor=factor, last_step_seen=seen, preset=preset)
    write_log(folder.log, probes=RIGONLY_LIKE)
    return folder, folder.amendments.read_bytes().splitlines(keepends=True)


def test_the_chain_holds_from_prereg(tmp_path):
    folder, lines = three(tmp_path)
    docs = [json.loads(x) for x in lines]
    assert [d["id"] for d in docs] == [1, 2, 3]
    assert all(len(d["hash"]) == 64 and len(d["prev"]) == 64 for d in docs)
    import hashlib

    assert docs[0]["prev"] == hashlib.sha256(folder.prereg.read_bytes()).hexdigest()
    assert docs[1]["prev"] == hashlib.sha256(lines[0].rstrip(b"\n")).hexdigest()
    assert [a.factor for a in read_amendments(folder)] == [1.5, 2.0, 2.5]


@pytest.mark.parametrize(
    "tamper, line, why",
    [
        (
            lambda ls: [ls[0], ls[1].replace(b'"factor":2.0', b'"factor":1.0'), ls[2]],
            2,
            "its content does not match its hash (edited)",
        ),
        (lambda ls: [ls[0], ls[2]], 2, "does not follow line 1"),
        (lambda ls: [ls[1], ls[0], ls[2]], 1, "does not follow prereg.json"),
        (
            lambda ls: [
                ls[0],
                ls[1],
                b'{"id": 9, "last_step_seen": 1, "rule": {"kind": "scale"}}\n',
            ],
            3,
            "no hash",
        ),
    ],
)
def test_a_tampered_ledger_is_named_and_nothing_from_the_break_applies(tmp_path, tamper, line, why):
    folder, lines = three(tmp_path)
    folder.amendments.write_bytes(b"".join(tamper(lines)))
    read = read_ledger(folder)
    assert read.broken.startswith(f"{folder.amendments}:{line}: {why}"), read.broken
    assert read.broken.endswith(f"amendments from line {line} on are not applied")
    assert len(read.amendments) == line - 1
    with pytest.raises(InputError):
        read_amendments(folder)
    with pytest.raises(InputError, match="nothing was written"):
        declare_amendment(
            folder, factor=3.0, last_step_seen=400, preset=load_preset(without_amendments(tmp_path))
        )
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "verdict", str(folder.root)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[3],
    )
    assert res.returncode == 2, res.stdout
    assert res.stderr.count("\n") == 1 and f"amendments.jsonl:{line}: {why}" in res.stderr


def test_a_changed_prereg_breaks_the_first_link(tmp_path):
    folder, _ = three(tmp_path)
    folder.prereg.write_bytes(folder.prereg.read_bytes() + b" ")
    assert read_ledger(folder).broken.startswith(
        f"{folder.amendments}:1: does not follow prereg.json"
    )


def test_declaring_onto_a_torn_line_is_refused(tmp_path):
    folder, lines = three(tmp_path)
    with open(folder.amendments, "ab") as fh:
        fh.write(b'{"id": 4, "ru')
    assert len(read_amendments(folder)) == 3  # a torn last line is a cut write, skipped
    with pytest.raises(InputError, match="ends in a torn line"):
        declare_amendment(
            folder, factor=3.0, last_step_seen=400, preset=load_preset(without_amendments(tmp_path))
        )
    assert folder.amendments.read_bytes().endswith(b'{"id": 4, "ru')
