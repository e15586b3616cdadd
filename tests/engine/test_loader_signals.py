"""Loader workers and signals, in real processes: a process holding a loader with workers
exits without hanging, a worker ignores a SIGTERM that is not its parent's, and no worker
outlives its parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.engine

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import numpy as np
    from fontaine_engine.corpus import Corpus
    from fontaine_engine.pipeline import Layout, StepBatches, loader
    from fontaine_engine.stats import NormStats

    n = 64
    data = Corpus(
        root=Path("."), names=("a",), train_names=("a",), fps=10,
        cameras=("observation.images.front",), images=(np.zeros((n, 8, 8, 3), np.uint8),),
        states=np.zeros((n, 6), np.float32), actions=np.zeros((n, 8, 6), np.float32),
        action_is_pad=np.zeros((n, 8), np.bool_), frame_actions=np.zeros((n, 6), np.float32),
        dataset=np.zeros(n, np.int8), episode=np.zeros(n, np.int32),
        first=np.zeros(n, np.int64), split=np.zeros(n, np.int8), dataset_stats={},
        task=np.zeros(n, np.int32), tasks=("t",), text_ids=np.zeros((1, 0), np.int64),
        text_mask=np.zeros((1, 0), np.bool_),
    )
    stats = NormStats.compute(data.states, data.frame_actions)
    batches = iter(loader(StepBatches(data, stats, Layout(8, 1, 1, 0), 0, 0.0), 0, 1000, 2, 2, False))
    next(batches)
    print(" ".join(str(w.pid) for w in batches._workers), flush=True)
    if sys.argv[1] == "wait":
        time.sleep(120)
    """
)


def _start(tmp_path: Path, mode: str) -> tuple[subprocess.Popen, list[int]]:
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.Popen(
        [sys.executable, str(script), mode], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    workers = [int(p) for p in proc.stdout.readline().split()]
    assert len(workers) == 2, workers
    return proc, workers


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _gone(pids: list[int], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def _reap(proc: subprocess.Popen, workers: list[int]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for pid in workers:  # ours: the holder's workers, if the change under test failed
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_process_holding_a_loader_exits(tmp_path):
    """The holder ends with its loader's workers alive: its exit must not hang on them."""
    proc, workers = _start(tmp_path, "exit")
    try:
        assert proc.wait(timeout=30) == 0
        assert _gone(workers, 5)
    finally:
        _reap(proc, workers)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, prctl")
def test_workers_ignore_a_stranger_and_die_with_their_parent(tmp_path):
    proc, workers = _start(tmp_path, "wait")
    try:
        os.kill(workers[0], signal.SIGTERM)  # not the parent: the parent decides when to stop
        time.sleep(1.0)
        assert _alive(workers[0]) and proc.poll() is None
        proc.kill()  # no chance to shut its workers down
        proc.wait(timeout=10)
        assert _gone(workers, 2.5)  # at once, not at the loader's 5 s watchdog poll
    finally:
        _reap(proc, workers)
