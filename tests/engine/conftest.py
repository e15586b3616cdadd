"""Shared fixtures: one corpus cache per test session, and a helper to run the engine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Before anything imports torch (the engine sets this too, but pytest may import torch
# first): spinning OpenMP threads crawl when the two cores are shared with subprocesses.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory) -> Path:
    from engine import corpus

    root = tmp_path_factory.mktemp("cache") / "corpus-v1"
    corpus.ensure(root)
    return root


def engine_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def tiny_argv(out: Path, data: Path, *extra: str, steps: int = 20) -> list[str]:
    return [sys.executable, "-m", "engine", "train", "--run-name", "t", "--output-dir", str(out),
            "--data-dir", str(data), "--model-size", "tiny", "--batch-size", "16",
            "--backward-chunks", "2", "--seed", "0", "--image-augment", "0.8",
            "--recompute-stats", "--objective", "joint", "--insulate-flow", "--lr", "1e-3",
            "--warmup-steps", "5", "--steps", str(steps), "--eval-every", "10",
            "--eval-dataset-breakdown", "--save-every", "10", "--num-workers", "2",
            "--prefetch-factor", "2", "--device", "cpu", *extra]


def run_engine(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=REPO, env=engine_env(), capture_output=True, text=True,
                          timeout=timeout)
