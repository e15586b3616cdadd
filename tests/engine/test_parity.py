"""2 gloo ranks (DDP + ZeRO-1 + no_sync) vs 1 process: same parameters after 3 steps."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.engine

from tests.engine.conftest import run_engine  # noqa: E402


def test_parity_two_ranks_vs_one_process(corpus_dir):
    proc = run_engine([sys.executable, "-m", "engine", "parity", "--nproc", "2", "--steps", "3",
                       "--data-dir", str(corpus_dir)], timeout=150)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    name, value = last.split()
    assert name == "max_param_diff"
    assert float(value) <= 1e-6
    print(last)
