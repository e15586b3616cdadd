"""Helpers to run the engine (the tiny run they share is tests/conftest.py's tiny_run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# Before anything imports torch (the engine sets this too, but pytest may import torch
# first): spinning OpenMP threads crawl when the two cores are shared with subprocesses.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

REPO = Path(__file__).resolve().parents[2]


def engine_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def tiny_argv(out: Path, data: Path, *extra: str, steps: int = 20) -> list[str]:
    return [
        sys.executable,
        "-m",
        "fontaine_engine",
        "train",
        "--run-name",
        "t",
        "--output-dir",
        str(out),
        "--data-dir",
        str(data),
        "--model-size",
        "tiny",
        "--batch-size",
        "16",
        "--backward-chunks",
        "2",
        "--seed",
        "0",
        "--image-augment",
        "0.8",
        "--recompute-stats",
        "--objective",
        "joint",
        "--insulate-flow",
        "--lr",
        "1e-3",
        "--warmup-steps",
        "5",
        "--steps",
        str(steps),
        "--eval-every",
        "10",
        "--eval-dataset-breakdown",
        "--save-every",
        "10",
        "--num-workers",
        "2",
        "--prefetch-factor",
        "2",
        "--device",
        "cpu",
        *extra,
    ]


def run_engine(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, cwd=REPO, env=engine_env(), capture_output=True, text=True, timeout=timeout
    )


def check_flags(argv: list[str], timeout: float = 0) -> subprocess.CompletedProcess:
    """Run `argv` through the engine's entry point in this process, for a refused flag.

    `argv` is a `python -m fontaine_engine ...` command that the engine's flag checks refuse
    before anything runs, so no case pays for a torch start-up. It returns the exit code and
    stderr as run_engine gives them. `timeout` is unused.
    """
    import contextlib
    import io

    from fontaine_engine.cli import main

    assert argv[1:3] == ["-m", "fontaine_engine"], argv
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv[3:])
    return subprocess.CompletedProcess(argv, code, "", err.getvalue())


def run_engines(argvs: list[list[str]], timeout: float = 180) -> list[subprocess.CompletedProcess]:
    """Run several engine commands at once and return their results in order.

    The two cores overlap one command's start-up with another's steps.
    """
    procs = [
        subprocess.Popen(
            argv,
            cwd=REPO,
            env=engine_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    done = []
    for argv, proc in zip(argvs, procs, strict=True):
        out, err = proc.communicate(timeout=timeout)
        done.append(subprocess.CompletedProcess(argv, proc.returncode, out, err))
    return done
