"""Malformed evidence never reads as a verdict: booleans are not metrics, two different
probes for one step without a resume are a conflict, records that go back without a resume
(or after the end) never rewind the run, odd numbers and nesting are malformed, not crashes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.verdict.rules import compute_verdict
from tests.logs import RIGONLY_LIKE, T0, dumps, meta, probe, records, train

CLEAN = 4  # the fixture reads AMBIGUOUS (final) under demosonly_1gpu
UNDECIDABLE = 6


def _write(path: Path, recs: list, extra_lines: tuple[str, ...] = ()) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else dumps(r)) + "\n" for r in [*recs, *extra_lines])
    )
    return path


def _verdict(path: Path, capsys, *flags: str) -> tuple[int, str]:
    code = main(["verdict", str(path), "--preset", "demosonly_1gpu", *flags])
    return code, capsys.readouterr().out


def _json(path: Path, capsys) -> dict:
    code, out = _verdict(path, capsys, "--json")
    doc = json.loads(out)
    doc["code"] = code
    return doc


def test_the_clean_fixture_reads_ambiguous(tmp_path, capsys):
    assert (
        _verdict(_write(tmp_path / "log.jsonl", records(probes=RIGONLY_LIKE)), capsys)[0] == CLEAN
    )


@pytest.mark.parametrize(
    "value, said",
    [
        ("true", "true (a boolean)"),
        ("false", "false (a boolean)"),
        ("1" + "0" * 400, "an integer of 401 digits"),
        ('"3.1"', "a string"),
    ],
)
def test_a_metric_that_is_not_a_real_number_is_undecidable(tmp_path, capsys, value, said):
    recs = records(probes=RIGONLY_LIKE)
    lines = [dumps(r) for r in recs]
    i = next(n for n, r in enumerate(recs) if r["kind"] == "eval" and r["step"] == 1000)
    lines[i] = lines[i].replace('"eval_chunk_mae": 3.7929', f'"eval_chunk_mae": {value}')
    assert value in lines[i]
    log = _write(tmp_path / "log.jsonl", lines)
    doc = _json(log, capsys)
    assert doc["code"] == UNDECIDABLE and doc["verdict"] == "UNDECIDABLE"
    assert f"eval_chunk_mae at step 1000 is {said}" in doc["reason"]


def test_huge_values_and_deep_nesting_are_no_crash(tmp_path, capsys):
    recs = records(probes={**RIGONLY_LIKE, 500: (-1e308, 3.25), 1000: (1e308, 3.41)})
    deep = "[" * 100_000 + "]" * 100_000
    log = _write(
        tmp_path / "log.jsonl", recs, (deep, '{"kind": "train", "step": 1001.0, "time": 1}')
    )
    doc = _json(log, capsys)
    # delta = 1e308 - (-1e308) overflows to inf: undecidable, not a traceback
    assert doc["code"] == UNDECIDABLE
    assert doc["log"]["malformed"] == 2 and len(doc["log"]["malformed_lines"]) == 2
    st = load_log(log)
    why = {m.line: m.reason for m in st.malformed}
    assert any("nested too deep" in r for r in why.values())
    assert any("'step' is 1001.0, a float" in r for r in why.values())
    assert compute_verdict(st, load_preset("demosonly_1gpu")).verdict == "UNDECIDABLE"


def test_a_finite_huge_delta_reads_without_overflow(tmp_path):
    recs = records(probes={**RIGONLY_LIKE, 1000: (1e308, 3.41)})
    st = load_log(_write(tmp_path / "log.jsonl", recs))
    v = compute_verdict(st, load_preset("demosonly_1gpu"))
    assert v.verdict == "SAME-DRIFT" and not v.provisional


def test_two_different_probes_for_one_step_without_a_resume_are_a_conflict(tmp_path, capsys):
    recs = records(probes=RIGONLY_LIKE)
    recs.insert(len(recs) - 1, probe(1000, T0 + 600, 2.0, 3.41))  # another value, no resume
    doc = _json(_write(tmp_path / "log.jsonl", recs), capsys)
    assert doc["code"] == UNDECIDABLE
    assert "two different probes for step 1000 with no resume between them" in doc["reason"]
    assert "eval_chunk_mae 3.7929 (line" in doc["reason"] and "and 2.0 (line" in doc["reason"]
    assert doc["log"]["conflicts"] == 1 and doc["log"]["replaced_steps"] == 0
    code, out = _verdict(tmp_path / "log.jsonl", capsys)
    assert "1 conflicting probe(s)" in out


def test_an_identical_repeat_of_a_probe_is_fine(tmp_path, capsys):
    recs = records(probes=RIGONLY_LIKE)
    again = probe(1000, T0 + 600, *RIGONLY_LIKE[1000])  # same values, logged later
    recs.insert(len(recs) - 1, again)
    doc = _json(_write(tmp_path / "log.jsonl", recs), capsys)
    assert doc["code"] == CLEAN and doc["log"]["conflicts"] == 0 and doc["log"]["repeats"] == 1


def test_after_a_resume_the_later_probe_wins(tmp_path, capsys):
    recs = [
        r
        for r in records(probes=RIGONLY_LIKE, steps=1000)
        if r["step"] <= 600 and r.get("event") != "end"
    ]
    recs += [
        meta(step=500, t=T0 + 900),
        {"kind": "event", "step": 500, "time": T0 + 900, "event": "resume", "detail": ""},
        probe(500, T0 + 901, 3.1, 3.25),
    ]  # re-probed after the resume: same anchor
    recs += [
        r
        for r in records(probes=RIGONLY_LIKE, steps=1000)
        if r["step"] > 500 and r["kind"] != "meta" and r.get("event") != "start"
    ]
    doc = _json(_write(tmp_path / "log.jsonl", recs), capsys)
    assert doc["code"] == CLEAN and doc["log"]["conflicts"] == 0 and doc["log"]["resumes"] == 1


def test_stray_records_after_the_end_never_rewind_a_finished_run(tmp_path, capsys):
    recs = records(probes=RIGONLY_LIKE)
    stray = [train(s, T0 + 2000 + s) for s in range(300, 401)]  # 101 records going back
    doc = _json(_write(tmp_path / "a.jsonl", recs + stray), capsys)
    assert doc["code"] == CLEAN and doc["read_step"] == 1000 and not doc["provisional"]
    assert doc["log"]["out_of_order"] == 101 and doc["log"]["replaced_steps"] == 0
    code, out = _verdict(tmp_path / "a.jsonl", capsys)
    assert code == CLEAN and "101 record(s) out of order, not applied" in out
    # one stray step-500 probe at the end: a conflict with the anchor, never a rewind
    doc = _json(_write(tmp_path / "b.jsonl", recs + [probe(500, T0 + 3000, 3.6, 3.3)]), capsys)
    assert doc["code"] == UNDECIDABLE and not doc["provisional"] and doc["read_step"] == 1000
    assert "step 500" in doc["reason"]
    # a resume to an earlier step after the end is out of order too
    resume = {"kind": "event", "step": 250, "time": T0 + 3000, "event": "resume", "detail": ""}
    doc = _json(_write(tmp_path / "c.jsonl", recs + [resume, train(251, T0 + 3001)]), capsys)
    assert doc["code"] == CLEAN and doc["log"]["out_of_order"] == 2
    assert doc["log"]["resumes"] == 0


def test_steps_going_back_without_a_resume_mid_run_are_reported_not_applied(tmp_path):
    recs = [r for r in records(probes=RIGONLY_LIKE) if r.get("event") != "end"]
    at = next(n for n, r in enumerate(recs) if r["kind"] == "train" and r["step"] == 800)
    recs[at:at] = [train(s, T0 + 400 + s) for s in range(300, 401)]
    st = load_log(_write(tmp_path / "log.jsonl", recs))
    assert st.out_of_order_count == 101 and st.replaced_steps == 0
    assert sorted(st.probes) == [250, 500, 750, 1000] and not st.superseded
    assert compute_verdict(st, load_preset("demosonly_1gpu")).verdict == "AMBIGUOUS"


def test_a_meta_record_of_another_run_mid_log_is_noted(tmp_path, capsys):
    recs = records(probes=RIGONLY_LIKE)
    recs.insert(400, meta(step=0, t=T0 + 5, run="someone-else", world_size=8))
    log = _write(tmp_path / "log.jsonl", recs)
    doc = _json(log, capsys)
    assert len(doc["log"]["notices"]) == 1
    note = doc["log"]["notices"][0]
    assert note.startswith("line 401: a meta record for run 'someone-else'")
    assert "world size 8" in note and "two runs may be writing one file" in note
    assert "note: line 401" in _verdict(log, capsys)[1]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_log_with_bare_cr_line_ends_reads_like_the_same_log_with_newlines(
    tmp_path, capsys, workers
):
    recs = records(probes=RIGONLY_LIKE)
    cr = tmp_path / "cr" / "train_log.jsonl"
    cr.parent.mkdir()
    cr.write_bytes("".join(dumps(r) + "\r" for r in recs).encode())
    lf = _write(tmp_path / "lf.jsonl", recs)
    a = load_log(cr, columns=False, workers=workers, parallel_min_bytes=0)
    b = load_log(lf, columns=False)
    assert list(a.steps) == list(b.steps) and sorted(a.probes) == sorted(b.probes)
    assert a.malformed_count == 0 and "bare CR" in a.notices[0]
    doc = _json(cr, capsys)
    assert doc["code"] == CLEAN and doc["log"]["records"] == len(recs)


def test_train_lines_nested_too_deep_are_malformed_in_verdict_and_replay_alike(tmp_path):
    """Train lines nested past JSON_DEPTH, the engine's own fields and all, among 1,000 others:
    `verdict` (its lean read of train lines) and `replay --plain` (line by line) each count
    and name the same lines malformed; one nested exactly to the bound is a record in both."""
    deep = "[" * 100 + "]" * 100  # 101 levels with the record around it
    deep_objects = '{"a": ' * 99 + "1" + "}" * 99
    at_bound = "[" * 63 + "]" * 63  # 64 levels: read
    lines = []
    for rec in records():
        line = dumps(rec)
        if rec["kind"] == "train" and rec["step"] in (100, 600, 601, 700):
            nested = {100: deep, 600: deep_objects, 601: deep, 700: at_bound}[rec["step"]]
            line = line[:-1] + f', "x": {nested}}}'
        if rec["kind"] == "train" and rec["step"] == 800:  # no fields but its step
            line = f'{{"kind": "train", "step": 800, "x": {deep}}}'
        lines.append(line)
    log = tmp_path / "train_log.jsonl"
    log.write_text("\n".join(lines) + "\n")
    bad = sorted(i for i, line in enumerate(lines, 1) if deep in line or deep_objects in line)
    assert len(bad) == 4

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "fontaine_tui", *args, str(log), "-p", "demosonly_1gpu"],
            capture_output=True,
            text=True,
            timeout=120,
            env={k: v for k, v in os.environ.items() if k != "FONTAINE_NOTIFY"},
        )

    verdict = cli("verdict", "--json")
    doc = json.loads(verdict.stdout)
    replay = cli("replay", "--plain")
    said = {
        int(m.group(1)): m.group(2)
        for m in re.finditer(r"^line (\d+): malformed \((.*)\)$", replay.stdout, re.M)
    }
    assert sorted(said) == bad, replay.stdout[-2000:]
    assert all(why.startswith("nested too deep: more than 64 levels") for why in said.values())
    assert doc["log"]["malformed"] == len(said) == 4, doc["log"]
    assert sorted(doc["log"]["malformed_lines"]) == bad
    assert verdict.returncode == replay.returncode, (verdict.stderr, replay.stderr)
    for columns in (True, False):  # the console's read and the verdict's, in process
        store = load_log(log, columns=columns)
        assert sorted(m.line for m in store.malformed) == bad
        assert {m.reason for m in store.malformed} == set(said.values())
