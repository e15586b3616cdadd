"""`fontaine-tui runs -j` where the runs list's last lines of a log cannot read a run as
`verdict` does: a run on this host with rotated segments or more probe, meta and event lines
than those is read whole, as `verdict` reads it; one too large for that, or with a broken
ledger (which `verdict` refuses), shows no read and says why, never another label."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from fontaine_tui.core.runs.fleet import EVALS, WHOLE_BYTES
from tests.commands.test_runs_json import _folder, runs_json


def test_a_run_the_list_cannot_read_whole_shows_no_read_and_says_why(tmp_path: Path) -> None:
    rotated = _folder(tmp_path, "rotated", 1000)
    log = rotated / "train_log.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    (rotated / "train_log.jsonl.1.gz").write_bytes(gzip.compress(b"".join(lines[:600])))
    log.write_bytes(b"".join(lines[600:]))  # the anchor's probe is in the segment
    busy = _folder(tmp_path, "busy", 1000)
    with (busy / "train_log.jsonl").open("a") as fh:
        for n in range(EVALS + 10):
            fh.write(json.dumps({"kind": "event", "step": 1000, "time": 1.0, "event": f"n{n}"}))
            fh.write("\n")
    large = _folder(tmp_path, "large", 1000)  # rotated, and past what the list reads whole
    log = large / "train_log.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    pad = b'{"kind": "note", "step": 1, "text": "' + b"x" * 1000 + b'"}\n'
    (large / "train_log.jsonl.1").write_bytes(b"".join(lines[:600]) + pad * (WHOLE_BYTES // 1000))
    log.write_bytes(b"".join(lines[600:]))
    broken = _folder(tmp_path, "broken", 1000)
    (broken / "amendments.jsonl").write_text('{"garbage": 1}\n')
    said = {}
    for root in (rotated, busy, broken):  # `verdict` reads the first two, refuses the third
        res = subprocess.run(
            [sys.executable, "-m", "fontaine_tui", "verdict", str(root), "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert res.returncode == (2 if root == broken else 4), res.stdout + res.stderr
        said[root.name] = json.loads(res.stdout)["verdict"] if root != broken else None
    rows = runs_json(tmp_path, {"rotated": rotated, "busy": busy, "large": large, "broken": broken})
    for name in ("rotated", "busy"):  # on this host, read whole: the verdict's read
        assert rows[name]["read"] == said[name] and rows[name]["note"] == "", rows[name]
    for name, why in (
        ("large", "rotated segments not read here"),
        ("broken", "amendments.jsonl:1"),
    ):
        assert rows[name]["read"] == "" and rows[name]["reading"] is None, rows[name]
        assert rows[name]["note"].startswith("no read: ") and why in rows[name]["note"], rows[name]


def test_hostile_segments_are_refused_at_once_and_a_live_rotated_run_is_read(
    tmp_path: Path,
) -> None:
    """A run read whole on this host: a gzip bomb of unparsable lines as a segment (a 16 KB
    file of 8M lines) is refused by its count of lines, quickly; a FIFO in place of a run's log
    holds neither that run's row nor the others', and leaves no process behind; an attached
    run with rotated segments (the rules judge its last lines) is read as `verdict` reads it."""
    import os
    import time

    bomb = _folder(tmp_path, "bomb", 1000)
    (bomb / "train_log.jsonl.1.gz").write_bytes(gzip.compress(b"{\n" * (8 << 20), 9))
    fifo = _folder(tmp_path, "fifo", 1000)
    (fifo / "train_log.jsonl").unlink()
    os.mkfifo(fifo / "train_log.jsonl")
    live = _folder(tmp_path, "live", 750)  # no end event: attached, its rules judged
    log = live / "train_log.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    (live / "train_log.jsonl.1").write_bytes(b"".join(lines[:600]))
    log.write_bytes(b"".join(lines[600:]))
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "verdict", str(live), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = json.loads(res.stdout)
    start = time.monotonic()
    rows = runs_json(tmp_path, {"bomb": bomb, "fifo": fifo, "live": live})
    assert time.monotonic() - start < 20  # minutes before: every line of the bomb parsed
    assert rows["bomb"]["read"] == "" and "more than 30,000 lines" in rows["bomb"]["note"]
    assert rows["fifo"]["state"] != "down" and rows["live"]["state"] != "down", rows
    assert rows["live"]["read"] == f"PROVISIONAL {said['verdict']}", rows["live"]
    assert rows["live"]["step_s"] == 0.5  # its pace, from the last lines, as before
    left = subprocess.run(["pgrep", "-f", str(fifo)], capture_output=True, text=True)
    assert left.stdout == "", left.stdout  # no grep left blocked on the FIFO
