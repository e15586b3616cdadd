"""`fontaine-tui get RUN --metric M`: a metric's series as CSV or JSON, in real subprocesses.

A run folder of ours (the demo's log) and one tensorboardX writes (the real library, a NaN
among its values); bad input is one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from tests.logs import meta, records_upto, train, write_log

NAN = float("nan")
ROOT = Path(__file__).resolve().parents[2]


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "get", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ},
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tensorboardX import SummaryWriter

    root = tmp_path_factory.mktemp("get")
    write_log(root / "ours" / "train_log.jsonl", records_upto(1000))
    # probe 750 logged again with another eval_chunk_mae and no resume between: a conflict
    recs = records_upto(1000)
    first = next(r for r in recs if r.get("kind") == "eval" and r["step"] == 750)
    recs.insert(recs.index(first) + 1, {**first, "eval_chunk_mae": 9.9})
    write_log(root / "twice" / "train_log.jsonl", recs)
    # probe 750 logged again with only another eval_ar_ce, in folders frozen from a preset
    # whose verdict reads eval_chunk_mae: a conflict on a field the verdict does not read
    recs = records_upto(1000)
    first = next(r for r in recs if r.get("kind") == "eval" and r["step"] == 750)
    recs.insert(recs.index(first) + 1, {**first, "eval_ar_ce": 0.9})
    for name in ("other", "frozen"):
        (root / name).mkdir()
        preset = load_preset(str(ROOT / "presets" / "demosonly_1gpu.toml"))
        freeze(RunFolder(root / name), preset, ["fontaine-tui", "launch", "x"], "test-host")
    write_log(root / "other" / "train_log.jsonl", recs)
    (root / "frozen" / "train_log.jsonl").write_bytes(
        (root / "twice" / "train_log.jsonl").read_bytes()
    )
    # a train record's own keys beside the columns: one logged NaN, and more keys than are kept
    # (17 records of 250 keys: 1 + 17 x 249 = 4234 keys, 4096 kept, 138 not)
    wide = [meta()]
    for step in range(1, 18):
        own = {f"k{step}_{i}": 1.0 for i in range(249)}
        wide.append({**train(step, float(step)), "lr_head": 0.001 if step != 2 else NAN, **own})
    write_log(root / "wide" / "train_log.jsonl", wide)
    with SummaryWriter(str(root / "tb")) as w:
        for step, value in ((1, 0.5), (2, 0.25), (3, float("nan")), (4, float("inf"))):
            w.add_scalar("eval/loss", value, step)
            w.add_scalar("train/loss", 1.0 / step, step)
            w.add_scalar("loss", 1.0 / step, step)
    return root


def test_get_csv_is_a_header_and_one_row_per_logged_step(runs):
    res = cli(runs, "ours", "--metric", "eval_chunk_mae", "--csv")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "step,eval_chunk_mae\n250,3.4623\n500,3.1\n750,3.5\n1000,3.7929\n"
    ranged = cli(runs, "ours", "--metric", "eval_chunk_mae", "--steps", "500:750")
    assert ranged.stdout.splitlines() == ["step,eval_chunk_mae", "500,3.1", "750,3.5"]
    opened = cli(runs, "ours", "--metric", "loss", "--steps", "998:")
    assert [r.split(",")[0] for r in opened.stdout.splitlines()] == ["step", "998", "999", "1000"]


def test_get_json_names_the_steps_asked_for_and_not_logged(runs):
    res = cli(runs, "ours", "-m", "eval_chunk_mae", "--steps", "500,600", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["schema"] == "fontaine-tui/series/1" and doc["kind"] == "probe"
    assert (doc["steps"], doc["values"], doc["missing"]) == ([500], [3.1], [600])
    assert res.stderr == "note: eval_chunk_mae was not logged at step(s) 600\n"


def test_get_names_a_probe_logged_twice_with_different_values(runs):
    """The verdict reads such a step UNDECIDABLE: get writes every value, never one silently."""
    res = cli(runs, "twice", "-m", "eval_chunk_mae", "--steps", "500:750")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["step,eval_chunk_mae", "500,3.1", "750,3.5", "750,9.9"]
    said = res.stderr.splitlines()
    assert len(said) == 1 and "logged with different values at step(s) 750" in said[0], said
    doc = json.loads(cli(runs, "twice", "-m", "eval_chunk_mae", "--json").stdout)
    assert doc["conflicts"] == [{"step": 750, "values": [3.5, 9.9]}]
    assert (doc["steps"], doc["values"]) == (
        [250, 500, 750, 750, 1000],
        [3.4623, 3.1, 3.5, 9.9, 3.7929],
    )
    assert doc["count"] == 5
    schema = json.loads((ROOT / "docs" / "schemas" / "series-1.schema.json").read_text())
    jsonschema.validate(doc, schema)
    # a field the two probes agree on is no conflict
    quiet = cli(runs, "twice", "-m", "eval_ar_ce", "--json")
    assert json.loads(quiet.stdout)["conflicts"] == [] and quiet.stderr == ""


def test_get_says_a_conflict_only_for_its_metric_in_the_verdicts_words(runs):
    """A conflict on another field is not said as one the verdict's read is UNDECIDABLE by.

    eval_ar_ce differs at 750, the verdict (frozen) reads eval_chunk_mae: get -m eval_ar_ce
    says the conflict as the verdict says one (both values, the lines), and never that the
    verdict reads it; get of the verdict's own field says that too."""
    other = cli(runs, "other", "-m", "eval_ar_ce", "--steps", "750")
    assert other.returncode == 0, other.stderr
    assert other.stdout.splitlines() == ["step,eval_ar_ce", "750,0.6", "750,0.9"]
    said = other.stderr.splitlines()
    assert len(said) == 1, said
    assert (
        "two different probes for step 750 with no resume between them: eval_ar_ce 0.6 (line"
        in said[0]
    )
    assert "and 0.9 (line" in said[0] and "verdict" not in said[0] and "UNDECIDABLE" not in said[0]
    quiet = cli(runs, "other", "-m", "eval_chunk_mae", "--steps", "750", "--json")
    assert quiet.stderr == "" and json.loads(quiet.stdout)["conflicts"] == []
    own = cli(runs, "frozen", "-m", "eval_chunk_mae", "--steps", "750")
    said = own.stderr.splitlines()
    assert len(said) == 1 and "eval_chunk_mae 3.5 (line" in said[0] and "and 9.9 (line" in said[0]
    assert "the verdict reads eval_chunk_mae: a read at such a step is UNDECIDABLE" in said[0]


def test_get_reads_another_trainers_run_and_writes_nan_as_nan(runs):
    res = cli(runs, "tb", "--metric", "eval/loss")
    assert res.returncode == 0, res.stderr
    # float32 scalars: 0.5 and 0.25 are exact; a NaN is never a blank that reads as 0
    assert res.stdout.splitlines() == ["step,eval/loss", "1,0.5", "2,0.25", "3,nan", "4,inf"]
    doc = json.loads(cli(runs, "tb", "--metric", "eval/loss", "--json").stdout)
    assert doc["format"] == "tensorboard" and doc["values"] == [0.5, 0.25, "nan", "inf"]


def test_get_reads_a_train_records_own_keys_and_names_the_keys_not_kept(runs):
    res = cli(runs, "wide", "--metric", "lr_head")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[:4] == ["step,lr_head", "1,0.001", "2,nan", "3,0.001"]
    res = cli(runs, "wide", "--metric", "nope")
    assert res.returncode == 2 and "138 more keys not kept" in res.stderr, res.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("ours", "-m", "nope"), "no metric 'nope' (metrics: loss, ar_ce,"),
        (("ours", "-m", "loss", "--steps", "9:3"), "--steps: '9:3': the range ends before"),
        (("ours", "-m", "loss", "--steps", "a,b"), "--steps: 'a,b': expected A:B"),
        (("ours", "-m", "loss", "--steps", "9" * 5000 + ":"), "--steps: a step has at most 18"),
        (("ours", "-m", "loss", "--steps", "1," + "9" * 5000), "--steps: a step has at most 18"),
        (("gone", "-m", "loss"), "gone: no such folder"),
        (("tb", "-m", "loss"), "both train records and probes: name train:loss or probe:loss"),
    ],
)
def test_get_bad_input_is_one_line_and_exit_2(runs, args, said):
    res = cli(runs, *args)
    assert res.returncode == 2 and res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], res.stderr
