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


@pytest.fixture(scope="session", autouse=True)
def frame_cache(tmp_path_factory) -> Path:
    """The engine's decoded-frame cache ($XDG_CACHE_HOME/fontaine-engine/frames) in a temp
    folder for the session, for this process and the engines it starts."""
    cache = tmp_path_factory.mktemp("xdg-cache")
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache)
    yield cache / "fontaine-engine" / "frames"
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory, frame_cache) -> Path:
    from engine import corpus

    root = tmp_path_factory.mktemp("cache") / "corpus-v2"
    corpus.ensure(root)
    corpus.load(root)  # decode the frames once for the session
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


def check_flags(argv: list[str], timeout: float = 0) -> subprocess.CompletedProcess:
    """`argv` (a `python -m engine ...` command) through the engine's entry point in this
    process, for commands its flag checks refuse before anything runs (no torch start-up
    per case): the exit code and stderr as run_engine gives them. `timeout` is unused."""
    import contextlib
    import io

    from engine.cli import main

    assert argv[1:3] == ["-m", "engine"], argv
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv[3:])
    return subprocess.CompletedProcess(argv, code, "", err.getvalue())
