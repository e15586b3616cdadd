"""A log read as several files loses nothing: `verdict`, `replay` and the store read a run
folder's rotated segments (train_log.jsonl.2.gz, .1) before the live file, and merge them
with the store's rules (a resume's later record wins, identical repeats change nothing)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from fontaine_tui.cli import main
from fontaine_tui.core.log.read import load_lines, load_log
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.verdict.record import EXIT_CODES
from fontaine_tui.core.verdict.rules import compute_verdict
from tests.logs import RIGONLY_LIKE, dumps, meta, probe, records, train

LOG = "train_log.jsonl"


def _text(recs: list[dict]) -> bytes:
    return "".join(dumps(r) + "\n" for r in recs).encode()


def _verdict_json(target: Path, capsys) -> tuple[int, dict]:
    code = main(["verdict", str(target), "--preset", "demosonly_1gpu", "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_run_split_by_rotation_reads_as_the_whole_run(tmp_path: Path, capsys) -> None:
    recs = records(RIGONLY_LIKE)
    whole = tmp_path / "whole"
    whole.mkdir()
    (whole / LOG).write_bytes(_text(recs))
    code_whole, doc_whole = _verdict_json(whole, capsys)
    split = tmp_path / "split"
    split.mkdir()
    a, b = len(recs) // 3, 2 * len(recs) // 3
    (split / (LOG + ".2.gz")).write_bytes(gzip.compress(_text(recs[:a])))
    (split / (LOG + ".1")).write_bytes(_text(recs[a:b]))
    (split / LOG).write_bytes(_text(recs[b:]))
    code, doc = _verdict_json(split, capsys)
    assert (
        (code, doc["verdict"], doc["delta"])
        == (code_whole, doc_whole["verdict"], doc_whole["delta"])
        == (4, "AMBIGUOUS", doc["delta"])
    )
    assert doc["log"]["records"] == doc_whole["log"]["records"] == len(recs)
    assert [g["name"] for g in doc["log"]["segments"]] == [LOG + ".2.gz", LOG + ".1", LOG]
    assert doc["log"]["segments"][1]["first_line"] == a + 1
    # the live file alone has lost the anchor: what the console showed before this was fixed
    alone = load_log(split / LOG, columns=False)
    assert compute_verdict(alone, load_preset("demosonly_1gpu")).verdict == "UNDECIDABLE"


def test_a_resume_into_a_fresh_file_that_repeats_the_anchor_probe(tmp_path: Path, capsys) -> None:
    """The user moved the log away before `--resume` started a new one, back from step 250."""
    first = [r for r in records(RIGONLY_LIKE) if r["step"] <= 600 and r.get("event") != "end"]
    t = 1_787_100_000.0
    second = [
        meta(step=250, t=t),
        {
            "kind": "event",
            "step": 250,
            "time": t,
            "event": "resume",
            "detail": "resumed from checkpoint step-000250",
        },
    ]
    for s in range(251, 1001):
        second.append(train(s, t + s))
        if s in (500, 750, 1000):
            ev = {500: 3.2000, 750: 3.5000, 1000: 4.3000}[s]  # the new timeline's probes
            second.append(probe(s, t + s + 0.1, ev, 3.3))
    second.append(
        {"kind": "event", "step": 1000, "time": t + 2000, "event": "end", "detail": "finished"}
    )
    run = tmp_path / "run"
    run.mkdir()
    (run / (LOG + ".1")).write_bytes(_text(first))
    (run / LOG).write_bytes(_text(second))
    code, doc = _verdict_json(run, capsys)
    assert doc["anchor_value"] == 3.2 and doc["read_value"] == 4.3  # the later records win
    assert doc["verdict"] == "SAME-DRIFT" and code == 3
    assert doc["log"]["resumes"] == 1 and doc["log"]["replaced_steps"] == 350
    store = load_log(run / LOG, columns=False, history=True)
    assert [p.step for p in store.superseded] == [500]
    assert store.superseded[0].eval_chunk_mae == 3.1


def test_identical_records_read_twice_change_nothing() -> None:
    """A rotation that copies lines twice, or a rewrite with the same content."""
    data = _text(records(RIGONLY_LIKE, steps=1000))
    once = load_lines([data])
    twice = load_lines([data])
    twice.begin_segment(LOG, "the same content again")
    load_lines([data], twice)
    assert list(twice.steps) == list(once.steps)
    assert twice.probes == once.probes and not twice.superseded
    assert twice.replaced_steps == 0 and twice.repeats == once.records
    preset = load_preset("demosonly_1gpu")
    assert (
        compute_verdict(twice, preset).to_json()["delta"]
        == compute_verdict(once, preset).to_json()["delta"]
    )


def test_replay_of_a_run_folder_plays_the_rotated_segments_first(tmp_path: Path, capsys) -> None:
    recs = records(RIGONLY_LIKE)
    run = tmp_path / "run"
    run.mkdir()
    half = len(recs) // 2
    (run / (LOG + ".1")).write_bytes(_text(recs[:half]))
    (run / LOG).write_bytes(_text(recs[half:]))
    # the verdict's code, as `verdict` exits: the fixture reads AMBIGUOUS, final
    assert (
        main(["replay", str(run / LOG), "--preset", "demosonly_1gpu", "--plain"])
        == EXIT_CODES["AMBIGUOUS"]
    )
    out = capsys.readouterr().out.splitlines()
    assert f"-- replaying {LOG}.1" in out and f"-- replaying {LOG}" in out
    assert out.index(f"-- replaying {LOG}.1") < out.index(f"-- replaying {LOG}")
    verdicts = [line for line in out if line.startswith("verdict: ")]
    assert verdicts[-1].startswith("verdict: AMBIGUOUS (final, step 1000")


def test_a_pipe_or_device_as_a_log_or_segment_is_one_line_exit_2(tmp_path, capsys):
    import os
    import subprocess
    import sys

    run = tmp_path / "run"
    run.mkdir()
    (run / LOG).write_text("".join(dumps(r) + "\n" for r in records(probes=RIGONLY_LIKE)))
    os.mkfifo(run / f"{LOG}.1")  # a reader that opened this would wait for ever
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "verdict", str(run), "--preset", "demosonly_1gpu"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and f"{LOG}.1: not a regular file" in err[0]
    assert main(["verdict", "/dev/zero", "--preset", "demosonly_1gpu"]) == 2
    assert "not a regular file" in capsys.readouterr().err
