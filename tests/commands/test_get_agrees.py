"""`get` and `verdict` read a hostile log alike, in real subprocesses on real files.

Each run folder puts at a step the verdict reads something a reader may drop: an eval value
that is not a number (a JSONL `true`, our log's `null` or string), or a probe logged twice
with other values of the metric (on two lines, or one line naming the key twice, a number then
a value that is not one). `verdict --json` says why
the read is UNDECIDABLE; `get --json` of the verdict's metric must hold the verdict's values at
the anchor and the read step and name what made the read UNDECIDABLE, and its note on stderr
must say it too. A run of another trainer is read with a preset given (`-p`), one of ours with
the preset frozen in its prereg.json."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from tests.logs import records_upto, write_log

ROOT = Path(__file__).resolve().parents[2]
UNDECIDABLE = 6

FOREIGN_PRESET = """[run]
name = "j"
[source]
kind = "jsonl"
[verdict]
metric = "eval/mae"
anchor_step = 10
endpoint_step = 100
healthy_max = 3.0
drift_min = 5.0
"""


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ},
    )


def foreign(root: Path, endpoint: str) -> tuple[str, ...]:
    """Another trainer's JSONL: eval/mae every 10 steps, the endpoint's line as given."""
    (root / "j").mkdir()
    with (root / "j" / "log.jsonl").open("w") as f:
        for s in range(1, 101):
            f.write(json.dumps({"step": s, "train/loss": 1 / s}) + "\n")
            if s % 10 == 0:
                f.write(
                    endpoint + "\n"
                    if s == 100
                    else json.dumps({"step": s, "eval/mae": 3.0 + s * 0.001}) + "\n"
                )
    (root / "j.toml").write_text(FOREIGN_PRESET)
    return ("j", "-p", "./j.toml")


def ours(root: Path, step: int, line: str) -> tuple[str, ...]:
    """Our own log, frozen from demosonly_1gpu, its probe at `step` written as `line` (with
    {step} and {time} filled in)."""
    folder = root / "ours"
    folder.mkdir()
    preset = load_preset(str(ROOT / "presets" / "demosonly_1gpu.toml"))
    freeze(RunFolder(folder), preset, ["fontaine-tui", "launch", "x"], "test-host")
    recs = records_upto(1000)
    write_log(folder / "train_log.jsonl", recs)
    at = next(r for r in recs if r.get("kind") == "eval" and r["step"] == step)
    text = (folder / "train_log.jsonl").read_text().splitlines()
    k = [json.loads(t) for t in text].index(at)
    text[k] = line.replace("{step}", str(step)).replace("{time}", repr(at["time"]))
    (folder / "train_log.jsonl").write_text("\n".join(text) + "\n")
    return ("ours",)


HOSTILE = {
    "a JSONL boolean at the endpoint": lambda root: foreign(
        root, '{"step": 100, "eval/mae": true}'
    ),
    "a null at our endpoint": lambda root: ours(
        root, 1000, '{"kind":"eval","step":{step},"time":{time},"eval_chunk_mae":null}'
    ),
    "a string at our anchor": lambda root: ours(
        root, 500, '{"kind":"eval","step":{step},"time":{time},"eval_chunk_mae":"n/a"}'
    ),
    "a JSONL key written twice at the endpoint, a number then a boolean": lambda root: foreign(
        root, '{"step": 100, "eval/mae": 3.1, "eval/mae": true}'
    ),
    "a JSONL endpoint on two lines with two numbers": lambda root: foreign(
        root, '{"step": 100, "eval/mae": 3.1}\n{"step": 100, "eval/mae": 3.2}'
    ),
    "our key written twice at the endpoint, a number then a string": lambda root: ours(
        root,
        1000,
        '{"kind":"eval","step":{step},"time":{time},"eval_chunk_mae":3.7929,"eval_chunk_mae":"x"}',
    ),
}


def by_step(doc: dict) -> dict[int, list[object]]:
    out: dict[int, list[object]] = {}
    for step, value in zip(doc["steps"], doc["values"], strict=True):
        out.setdefault(step, []).append(value)
    return out


def assert_agree(verdict: dict, got: dict, note: str) -> None:
    """`get`'s series of the verdict's metric holds what the verdict read, and names why a read
    is UNDECIDABLE where the verdict says so."""
    at = by_step(got)
    for step, value in (
        (verdict["anchor_step"], verdict.get("anchor_value")),
        (verdict["read_step"], verdict.get("read_value")),
    ):
        if value is not None:
            assert value in at.get(step, []), (step, value, at.get(step))
    odd = {(e["step"], e["logged"]) for e in got["not_numbers"]}
    reason = verdict["reason"]
    if m := re.search(r"at step (\d+) is (.+), not a finite number", reason):
        step, what = int(m[1]), m[2]
        if what != "nan":  # a logged NaN is a number's NaN: nothing more to name
            assert (step, what) in odd, (reason, odd)
            assert re.search(rf"not a number at step\(s\) [\d, ]*\b{step}\b", note), note
    if m := re.search(r"two different probes for step (\d+)", reason):
        assert int(m[1]) in {c["step"] for c in got["conflicts"]}, (reason, got["conflicts"])
        assert re.search(rf"different values at step\(s\) [\d, ]*\b{m[1]}\b", note), note
    if verdict["verdict"] != "UNDECIDABLE":
        read = {verdict["anchor_step"], verdict["read_step"]}
        assert not read & {s for s, _ in odd}, odd
        assert not read & {c["step"] for c in got["conflicts"]}, got["conflicts"]


@pytest.mark.parametrize("case", list(HOSTILE))
def test_get_says_what_makes_the_verdict_undecidable(tmp_path: Path, case: str) -> None:
    run = HOSTILE[case](tmp_path)
    verdict = cli(tmp_path, "verdict", *run, "--json")
    assert verdict.returncode == UNDECIDABLE, (verdict.stdout, verdict.stderr)
    doc = json.loads(verdict.stdout)
    metric = doc["metric"]
    got = cli(tmp_path, "get", run[0], "-m", metric, "--json")
    assert got.returncode == 0, got.stderr
    assert_agree(doc, json.loads(got.stdout), got.stderr)
    csv = cli(tmp_path, "get", run[0], "-m", metric)
    assert csv.returncode == 0 and csv.stderr == got.stderr, csv.stderr
    rows = [r.split(",") for r in csv.stdout.splitlines()[1:]]
    assert [int(s) for s, _ in rows] == json.loads(got.stdout)["steps"]
    if run[0] == "ours":  # the frozen rules read the metric: the note says so
        assert f"the verdict reads {metric}: a read at such a step is UNDECIDABLE" in csv.stderr
