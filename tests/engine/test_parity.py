"""`python -m fontaine_engine parity`: 2 gloo ranks (DDP + ZeRO-1, loader workers on, flow
insulated) vs 1 process, in both sync modes: the first step's gradient and the parameters after 20
steps at full learning rate. The check's own self-test injects a gradient-scale bug and
must see parity fail."""

from __future__ import annotations

import re
import sys

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.engine

from fontaine_engine.parity import GRAD_TOLERANCE, PARAM_TOLERANCE  # noqa: E402

from tests.engine.conftest import check_flags, run_engine  # noqa: E402


def _parity(corpus_dir, *extra: str):
    proc = run_engine(
        [
            sys.executable,
            "-m",
            "fontaine_engine",
            "parity",
            "--nproc",
            "2",
            "--data-dir",
            str(corpus_dir),
            *extra,
        ],
        timeout=240,
    )
    figures = {
        k: [float(v) for v in re.findall(rf"^{k} (\S+)$", proc.stdout, re.M)]
        for k in ("max_grad_diff", "max_param_diff")
    }
    return proc, figures


def test_parity_both_sync_modes_within_tolerance(corpus_dir):
    proc, figures = _parity(corpus_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no_sync accumulation" in proc.stdout and "per-chunk all-reduce" in proc.stdout
    assert "2 loader workers" in proc.stdout and "flow insulated" in proc.stdout
    assert "20 steps at lr 0.0003 (no warmup" in proc.stdout
    # one figure per mode, each well inside its tolerance
    assert len(figures["max_grad_diff"]) == 2 and len(figures["max_param_diff"]) == 2
    assert max(figures["max_grad_diff"]) <= GRAD_TOLERANCE / 10
    assert max(figures["max_param_diff"]) <= PARAM_TOLERANCE / 3
    # the parameters really moved: a comparison of untrained weights would prove nothing
    moved = [float(m) for m in re.findall(r"largest change (\S+)\)", proc.stdout)]
    assert moved and min(moved) > 100 * PARAM_TOLERANCE


def test_uniform_gradient_scale_bug_fails_parity(corpus_dir):
    """A 2x gradient on every rank: Adam's update is scale invariant (the parameters agree),
    so only the step-1 gradient comparison can see it, and it must."""
    proc, figures = _parity(
        corpus_dir, "--mode", "no_sync", "--inject-grad-scale", "2", "--steps", "5"
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert figures["max_grad_diff"][0] > 0.5  # reads 1: every tensor's gradient doubled
    assert figures["max_param_diff"][0] <= PARAM_TOLERANCE  # invisible to the old check
    assert "within tolerance 0.0001: NO" in proc.stdout


def test_one_rank_scaled_fails_both_comparisons(corpus_dir):
    proc, figures = _parity(
        corpus_dir,
        "--mode",
        "chunk",
        "--inject-grad-scale",
        "2",
        "--inject-rank",
        "1",
        "--steps",
        "5",
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert figures["max_grad_diff"][0] > 0.5
    assert figures["max_param_diff"][0] > 10 * PARAM_TOLERANCE


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--nproc", "1"], "--nproc 1: expected at least 2 ranks"),
        (["--inject-rank", "1"], "--inject-rank: only with --inject-grad-scale"),
        (
            ["--inject-grad-scale", "2", "--inject-rank", "2"],
            "--inject-rank 2: expected a rank below",
        ),
    ],
)
def test_bad_parity_flags_one_line(corpus_dir, flags, message):
    proc = check_flags(
        [
            sys.executable,
            "-m",
            "fontaine_engine",
            "parity",
            "--data-dir",
            str(corpus_dir),
            *(["--nproc", "2"] if "--nproc" not in flags else []),
            *flags,
        ]
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert message in proc.stderr
