"""A run whose own evidence conflicts is not banked: two probes for one step, malformed lines,
out-of-order records or probes, its own verdict UNDECIDABLE. With --even-if-conflicting it is
banked marked, and a preset that uses the marked entry refuses to load."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fontaine_tui.cli import main
from fontaine_tui.core.bank import store as bank
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from tests.core.launch.conftest import without_amendments
from tests.logs import dumps, probe, records, write_log

ROOT = Path(__file__).parents[3]


def _log(folder: Path, recs: list[dict], extra_lines: dict[int, str] | None = None) -> Path:
    """A run's train_log.jsonl: `recs` as lines, with `extra_lines` (index -> raw line)
    written before the record at that index."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [dumps(r) for r in recs]
    for i, raw in sorted((extra_lines or {}).items(), reverse=True):
        lines.insert(i, raw)
    (folder / "train_log.jsonl").write_text("".join(line + "\n" for line in lines))
    return folder


def _index(recs: list[dict], kind: str, step: int) -> int:
    return next(i for i, r in enumerate(recs) if r["kind"] == kind and r["step"] == step)


def _bank(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "bank", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def _refused(res: subprocess.CompletedProcess, bank_path: Path, *named: str) -> str:
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    for text in named:
        assert text in res.stderr, res.stderr
    assert "--even-if-conflicting" in res.stderr
    assert not bank_path.exists() or not any(bank_path.iterdir())  # nothing was banked
    return res.stderr


def test_a_conflicting_probe_is_not_banked(tmp_path, bank_path):
    run = _conflicting(tmp_path)  # step 750 logged twice with other values, no resume
    _refused(
        _bank("add", str(run), "--as", "ref"),
        bank_path,
        f"{run}: its own evidence conflicts:",
        "two different probes for step 750 (line",
    )


def test_malformed_probe_lines_are_not_banked(tmp_path, bank_path):
    recs = records()
    i500, i750 = _index(recs, "eval", 500), _index(recs, "eval", 750)
    torn = '{"kind": "eval", "step": 500, "eval_chunk_mae": 3.1, "train_chunk'
    bad = '{"kind": "eval", "step": 750, "eval_chunk_mae": 3.5,, "n_frames": 256}'
    run = _log(tmp_path / "run", recs, {i500: torn, i750: bad})
    _refused(
        _bank("add", str(run), "--as", "ref"),
        bank_path,
        f"2 malformed lines (line {i500 + 1}, line {i750 + 2})",
    )


def test_out_of_order_probes_and_records_are_not_banked(tmp_path, bank_path):
    recs = records()
    p500 = recs.pop(_index(recs, "eval", 500))
    recs.insert(_index(recs, "eval", 750) + 1, p500)  # step 500's probe after step 750's
    back = dict(recs[_index(recs, "train", 900)], step=100)  # a train record going back
    recs.insert(_index(recs, "train", 900) + 1, back)
    run = _log(tmp_path / "run", recs)
    _refused(
        _bank("add", str(run), "--as", "ref"), bank_path, "2 out-of-order records not applied (line"
    )


def test_a_run_whose_own_verdict_is_undecidable_is_not_banked(tmp_path, bank_path):
    run = tmp_path / "run"
    run.mkdir()
    freeze(RunFolder(run), load_preset(without_amendments(tmp_path)), ["engine"], "h", now=1.8e9)
    recs = [r for r in records() if not (r["kind"] == "eval" and r["step"] == 1000)]
    _log(run, recs)
    _refused(
        _bank("add", str(run), "--as", "ref"),
        bank_path,
        "its own verdict is UNDECIDABLE: no probe at the endpoint (step 1000)",
    )


def test_a_clean_launched_run_still_banks(tmp_path, bank_path):
    run = tmp_path / "run"
    run.mkdir()
    freeze(RunFolder(run), load_preset(without_amendments(tmp_path)), ["engine"], "h", now=1.8e9)
    write_log(run / "train_log.jsonl", records())
    res = _bank("add", str(run), "--as", "ref")
    assert res.returncode == 0, res.stderr
    assert "conflicting_evidence" not in bank.get("ref").doc


def _conflicting(tmp_path: Path) -> Path:
    recs = records()
    at = _index(recs, "eval", 750) + 1
    recs.insert(at, probe(750, recs[at]["time"], 3.9, 3.3))
    return _log(tmp_path / "run", recs)


def test_banked_even_if_conflicting_it_is_marked(tmp_path, bank_path, capsys):
    run = _conflicting(tmp_path)
    res = _bank("add", str(run), "--as", "ref", "--even-if-conflicting")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"banked {run} as ref (MARKED: its own evidence conflicts)")
    entry = bank.get("ref")
    marks = entry.doc["conflicting_evidence"]
    assert len(marks) == 1 and marks[0].startswith("two different probes for step 750")
    assert entry.marked == tuple(marks)
    assert main(["bank", "list"]) == 0
    assert "MARKED: conflicting evidence" in capsys.readouterr().out
    assert main(["bank", "show", "ref"]) == 0
    assert f"marked: {marks[0]}" in capsys.readouterr().out


def test_a_preset_that_uses_a_marked_entry_refuses_to_load(tmp_path, bank_path, capsys):
    assert (
        _bank("add", str(_conflicting(tmp_path)), "--as", "ref", "--even-if-conflicting").returncode
        == 0
    )
    entry = bank.get("ref")
    # a preset that derives its bounds from it refuses to load: one line, the entry named
    path = without_amendments(tmp_path)
    path.write_text(
        path.read_text().replace("[gates]", '[comparators.ref]\nbank = "ref"\n\n[gates]')
    )
    clean = _log(tmp_path / "clean", records())
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "verdict", str(clean), "--preset", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert (
        f"comparators.ref.bank: the banked run ref@{entry.sha256[:12]} was banked with "
        f"its own evidence conflicting (two different probes for step 750"
    ) in res.stderr
    assert "no bound is derived from it" in res.stderr
    # pinned by its full sha256 too
    pinned = path.read_text().replace('bank = "ref"', f'bank = "ref@{entry.sha256}"')
    path.write_text(pinned)
    assert main(["verdict", str(clean), "--preset", str(path)]) == 2
    assert "was banked with its own evidence conflicting" in capsys.readouterr().err


def test_a_marked_entry_keeps_its_mark_in_its_sha256(tmp_path, bank_path):
    """Dropping the mark from the file is an edit: the entry is refused, never read clean."""
    assert (
        _bank("add", str(_conflicting(tmp_path)), "--as", "ref", "--even-if-conflicting").returncode
        == 0
    )
    sha = bank.get("ref").sha256
    path = bank_path / "ref" / f"{sha}.json"
    doc = json.loads(path.read_text())
    del doc["conflicting_evidence"]
    path.write_text(bank.canonical(doc).decode() + "\n")
    res = _bank("show", "ref")
    assert res.returncode == 2 and "(edited); not used" in res.stderr
