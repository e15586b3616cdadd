"""`fontaine-tui get` on a blinded run: no probe value before the endpoint but a recorded look.

A run folder frozen from a blind preset (demosonly_1gpu with `blind = true`), read by `get` in
real subprocesses: the rule's metric, its per-dataset split and the train slice (the probes'
fields, which the verdict reads) are refused with exit 7 and one line; the train records' metrics
stay readable; `--unblind WHY` records the look in review.jsonl and then prints; the final read
needs no look."""

from __future__ import annotations

import json

import pytest

from fontaine_tui.core.verdict import review
from tests.commands.test_blind import SECRETS, cli, run_folder


@pytest.mark.parametrize(
    "metric", ["eval_chunk_mae", "train_chunk_mae", "breakdown.rig", "eval_ar_ce"]
)
def test_get_refuses_a_probe_field_of_a_blinded_run(tmp_path, metric):
    root = run_folder(tmp_path, 750)
    for fmt in ("--csv", "--json"):
        res = cli(tmp_path, "get", str(root), "-m", metric, fmt)
        assert res.returncode == 7 and res.stdout == "", res.stdout
        said = res.stderr.splitlines()
        assert len(said) == 1 and "blinded" in said[0] and "--unblind WHY" in said[0], said
        assert not any(s in res.stderr for s in SECRETS)
    assert not (root / "review.jsonl").exists()  # refusing records nothing


def test_get_reads_a_blinded_runs_train_metrics_and_the_final_read(tmp_path):
    root = run_folder(tmp_path, 750)
    loss = cli(tmp_path, "get", str(root), "-m", "loss", "--steps", "1:2")
    assert loss.returncode == 0 and loss.stdout.startswith("step,loss\n1,"), loss.stderr
    done = tmp_path / "done"
    done.mkdir()
    final = run_folder(done, 1000)
    res = cli(done, "get", str(final), "-m", "eval_chunk_mae")
    assert res.returncode == 0 and "750,3.5" in res.stdout, res.stderr


def test_get_unblind_records_the_look_then_prints(tmp_path):
    root = run_folder(tmp_path, 750)
    empty = cli(tmp_path, "get", str(root), "-m", "eval_chunk_mae", "--unblind", " ")
    assert empty.returncode == 2 and "expected why" in empty.stderr
    assert not (root / "review.jsonl").exists()
    shown = cli(tmp_path, "get", str(root), "-m", "eval_chunk_mae", "--unblind", "budget", "-j")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["values"] == [3.4623, 3.1, 3.5]
    line = json.loads((root / "review.jsonl").read_text())
    assert (line["action"], line["who"], line["note"], line["read_step"]) == (
        "unblind",
        "alice",
        "budget",
        750,
    )
    assert review.verify(root / "review.jsonl").ok
    # the next reader is blinded again; the verdict card names the look
    assert cli(tmp_path, "get", str(root), "-m", "eval_chunk_mae").returncode == 7
    card = cli(tmp_path, "verdict", str(root), who="bob").stdout
    assert "by alice at step 750: budget" in card


def test_get_shows_no_conflict_of_a_blinded_run_before_a_recorded_look(tmp_path):
    """The probe at 750 logged twice with other values: a conflict carries both values, so a
    blinded run's is neither printed nor named (no row, no note) until a look is recorded."""
    from tests.logs import T0, dumps, probe

    root = run_folder(tmp_path, 750)
    with (root / "train_log.jsonl").open("a") as fh:
        fh.write(dumps(probe(750, T0 + 380, 3.6, 3.3)) + "\n")
    for metric in ("eval_chunk_mae", "eval_ar_ce", "breakdown.rig"):
        hidden = cli(tmp_path, "get", str(root), "-m", metric, "-j")
        assert hidden.returncode == 7 and hidden.stdout == "", hidden.stdout
        assert len(hidden.stderr.splitlines()) == 1 and "3.6" not in hidden.stderr
        assert "different values" not in hidden.stderr and "UNDECIDABLE" not in hidden.stderr
    loss = cli(tmp_path, "get", str(root), "-m", "loss", "-j")
    assert loss.returncode == 0 and loss.stderr == "", loss.stderr
    assert json.loads(loss.stdout)["conflicts"] == []
    shown = cli(tmp_path, "get", str(root), "-m", "eval_chunk_mae", "-j", "--unblind", "audit")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["conflicts"] == [{"step": 750, "values": [3.5, 3.6]}]
    assert "a read at such a step is UNDECIDABLE" in shown.stderr
