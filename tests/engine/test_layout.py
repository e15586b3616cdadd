"""How one optimizer step's batch is cut: chunks per rank = batch / (micro-batch x world size)
when the per-rank micro-batch is stated, else backward chunks counted per rank."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.engine

from fontaine_engine.pipeline import Layout, LayoutError, chunks_per_rank  # noqa: E402

from tests.engine.conftest import REPO, engine_env, run_engines, tiny_argv  # noqa: E402


def _without(argv: list[str], flag: str) -> list[str]:
    i = argv.index(flag)
    return argv[:i] + argv[i + 2 :]


def _replace(argv: list[str], flag: str, value: str) -> list[str]:
    argv = list(argv)
    argv[argv.index(flag) + 1] = value
    return argv


def test_the_drifting_recipe_cut_by_its_micro_batch():
    # effective batch 96, micro-batch 12: 8 ranks take 1 chunk each, one process takes 8
    assert chunks_per_rank(96, 8, micro=12) == 1
    assert chunks_per_rank(96, 1, micro=12) == 8
    assert chunks_per_rank(96, 2, micro=12) == 4
    assert chunks_per_rank(96, 8, chunks=1, micro=12) == 1  # a chunk count that agrees
    # chunks counted per rank, as before
    assert chunks_per_rank(96, 1) == 8 and chunks_per_rank(96, 1, chunks=8) == 8
    assert chunks_per_rank(96, 2, chunks=4) == 4


def test_a_per_rank_chunk_count_that_does_not_divide_suggests_the_micro_batch():
    with pytest.raises(LayoutError) as info:
        chunks_per_rank(96, 8, chunks=8)  # the recipe's 8 chunks read per rank: 8 x 8 = 64
    msg = str(info.value)
    assert msg.startswith(
        "--batch-size 96: expected a multiple of --backward-chunks x world size (8 x 8 = 64)"
    )
    assert "--micro-batch" in msg and "\n" not in msg


def test_a_micro_batch_that_does_not_divide_and_a_disagreeing_chunk_count():
    with pytest.raises(LayoutError) as info:
        chunks_per_rank(96, 8, micro=10)
    assert str(info.value) == (
        "--batch-size 96: expected a multiple of --micro-batch x world size "
        "(10 x 8 = 80), for whole backward chunks per rank"
    )
    with pytest.raises(LayoutError) as info:
        chunks_per_rank(96, 16, micro=12)  # 192 > 96: not even one chunk per rank
    assert "(12 x 16 = 192)" in str(info.value)
    with pytest.raises(LayoutError) as info:
        chunks_per_rank(96, 1, chunks=4, micro=12)
    assert str(info.value) == (
        "--backward-chunks 4 and --micro-batch 12 disagree: batch 96 / "
        "(12 x world size 1) = 8 chunk(s) per rank (give one of them)"
    )


def test_a_sample_keeps_its_slot_however_the_batch_is_cut():
    one = Layout.of(96, 1, 0, micro=12)
    assert (one.chunks, one.micro) == (8, 12)
    for rank in range(8):
        eight = Layout.of(96, 8, rank, micro=12)
        assert (eight.chunks, eight.micro) == (1, 12)
        assert np.array_equal(eight.slots(0), one.slots(rank))
    assert sorted(np.concatenate([one.slots(k) for k in range(8)])) == list(range(96))


def test_validate_resolves_the_chunks_for_the_world_size(tmp_path, corpus_dir, monkeypatch):
    """validate_train reads WORLD_SIZE as torchrun sets it (engine/distributed.world_from_env)."""
    from fontaine_engine.cli import validate_train
    from fontaine_engine.parser import build_parser

    base = _without(tiny_argv(tmp_path / "out", corpus_dir), "--backward-chunks")
    base = _replace(base, "--batch-size", "96")
    for world, chunks in (("8", 1), ("2", 4), ("1", 8)):
        monkeypatch.setenv("WORLD_SIZE", world)
        args = build_parser().parse_args(base[3:] + ["--micro-batch", "12"])
        validate_train(args)
        assert args.backward_chunks == chunks, world


def test_a_bad_layout_in_a_real_process_is_one_line_and_exit_2(tmp_path, corpus_dir):
    import subprocess

    argv = _replace(
        _replace(tiny_argv(tmp_path, corpus_dir), "--batch-size", "96"), "--backward-chunks", "8"
    )
    env = {**engine_env(), "WORLD_SIZE": "8", "RANK": "0", "LOCAL_RANK": "0"}
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith(
        "engine: error: --batch-size 96: expected a multiple of "
        "--backward-chunks x world size (8 x 8 = 64)"
    )
    assert "--micro-batch M" in line
    proc = subprocess.run(
        argv + ["--micro-batch", "12"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "engine: error: --backward-chunks 8 and --micro-batch 12 disagree: batch 96 / "
        "(12 x world size 8) = 1 chunk(s) per rank (give one of them)"
    ]
    assert not (tmp_path / "train_log.jsonl").exists() and not (tmp_path / "checkpoints").exists()


def test_a_run_cut_by_micro_batch_is_the_run_cut_by_chunks(tmp_path, corpus_dir):
    """--micro-batch 8 on one process is --backward-chunks 2 (batch 16): the same losses,
    and the checkpoint records the chunks it took and the micro-batch it was given."""
    base = _replace(tiny_argv(tmp_path / "chunks", corpus_dir, steps=2), "--num-workers", "0")
    by_micro = _without(
        _replace(base, "--output-dir", str(tmp_path / "micro")), "--backward-chunks"
    ) + ["--micro-batch", "8"]
    for done in run_engines([base, by_micro]):
        assert done.returncode == 0, done.stderr

    def losses(run):
        lines = (tmp_path / run / "train_log.jsonl").read_text().splitlines()
        return [r["loss"] for r in map(json.loads, lines) if r["kind"] == "train"]

    assert len(losses("chunks")) == 2 and losses("micro") == losses("chunks")
    meta = json.loads(
        (tmp_path / "micro" / "checkpoints" / "step-000002" / "meta.json").read_text()
    )
    assert (meta["recipe"]["backward_chunks"], meta["recipe"]["micro_batch"]) == (2, 8)
    assert os.path.isfile(tmp_path / "micro" / "checkpoints" / "step-000002" / "model.safetensors")
