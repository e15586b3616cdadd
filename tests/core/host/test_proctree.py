"""The process tree of a real launched tree: roles, CPU, memory, GPU memory; guarded signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.core.host.nvml import GpuProcess, GpuSample
from fontaine_tui.core.host.proctree import ProcTree, TreeLook, role_of, send_signal

TREE = Path(__file__).with_name("proctree_tree.py")
ROLES = {"engine", "rank 0", "rank 1", "loader worker (rank 0)"}
NO_GPU = (None, "NVML: library not found")


def _until(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "the tree did not come up in time"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """The running tree (its root, the SIGUSR1 record) with every member up."""
    record = tmp_path_factory.mktemp("tree") / "signals.txt"
    root = subprocess.Popen(
        [sys.executable, str(TREE), str(record)],
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])},
    )
    looker = TreeLook()

    def up() -> bool:
        return ROLES <= {m.role for m in looker.look(root.pid, gpus=NO_GPU).members}

    try:
        _until(up)
        yield root, record
    finally:
        os.killpg(root.pid, signal.SIGKILL)
        root.wait(10)


def test_members_roles_cpu_memory_threads(tree):
    root, _ = tree
    looker = TreeLook()
    first = looker.look(root.pid, gpus=NO_GPU)
    assert all(m.cpu_pct is None for m in first.members)  # one look: no CPU time between two
    time.sleep(0.5)
    look = looker.look(root.pid, gpus=NO_GPU)
    by_role = {m.role: m for m in look.members}
    assert ROLES <= set(by_role), [m.role for m in look.members]
    assert look.members[0].pid == root.pid and look.members[0].depth == 0
    assert by_role["rank 0"].depth == by_role["rank 1"].depth == 1
    worker = by_role["loader worker (rank 0)"]
    assert worker.depth == 2 and worker.ppid == by_role["rank 0"].pid
    assert worker.name.startswith("pt_data_worker")
    for m in look.members:
        assert m.mem is not None and m.mem > 1 << 20, m
        assert m.threads is not None and m.threads >= 1
        assert m.cpu_pct is not None and m.state
    assert by_role["rank 1"].cpu_pct > 20  # it spins
    assert by_role["loader worker (rank 0)"].cpu_pct < 20  # it sleeps
    assert look.gpu_reason == "no GPU (NVML: library not found)"
    assert all(m.gpu_mem is None and not m.gpus for m in look.members)


def test_gpu_memory_from_nvml_per_process(tree):
    root, _ = tree
    rank0 = next(m for m in TreeLook().look(root.pid, gpus=NO_GPU).members if m.role == "rank 0")
    gpus = tuple(
        GpuSample(f"GPU-{i}", i, i, "H100", 50.0, 0, 80 << 30, 300.0, 60.0, procs)
        for i, procs in enumerate(
            [(GpuProcess(rank0.pid, "python", 3 << 30), GpuProcess(1, "other", 1 << 30)), ()]
        )
    )
    look = TreeLook().look(root.pid, gpus=(gpus, ""))
    assert look.gpu_reason == ""
    shown = {m.pid: (m.gpu_mem, m.gpus) for m in look.members}
    assert shown[rank0.pid] == (3 << 30, (0,))
    assert all(v == (None, ()) for pid, v in shown.items() if pid != rank0.pid)
    assert 1 not in shown  # another user's process on the GPU is not in the tree


def test_gone_root_says_so():
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait(10)
    assert TreeLook().look(done.pid, gpus=NO_GPU) == ProcTree(
        done.pid, (), reason=f"process {done.pid} is gone"
    )


@pytest.mark.parametrize(
    ("name", "argv", "rank", "parent", "root", "role"),
    [
        (
            "torchrun",
            ("/usr/bin/python", "/usr/bin/torchrun", "--nproc-per-node=2"),
            None,
            None,
            "engine",
            "torchrun",
        ),
        (
            "python",
            ("python", "-m", "torch.distributed.run", "train.py"),
            None,
            None,
            None,
            "torchrun",
        ),
        ("python", ("python", "train.py"), "3", None, None, "rank 3"),
        ("python", ("python", "train.py"), "3", "3", None, "child of rank 3"),
        ("pt_data_worker", ("python", "train.py"), "3", "3", None, "loader worker (rank 3)"),
        (
            "python",
            ("python", "-c", "from multiprocessing.resource_tracker import main"),
            None,
            None,
            None,
            "resource tracker",
        ),
        ("python", ("python", "train.py", "--local_rank=2"), None, None, None, "local rank 2"),
        ("python", ("python", "train.py"), None, None, None, ""),
    ],
)
def test_role_of(name, argv, rank, parent, root, role):
    assert role_of(name, argv, rank, parent, root) == role


def _members(root: int):
    return {m.role: m for m in TreeLook().look(root, gpus=NO_GPU).members}


def _signals(record: Path) -> list[str]:
    return record.read_text().split() if record.exists() else []


def test_signal_reaches_a_member(tree):
    root, record = tree
    members = _members(root.pid)
    before = len(_signals(record))
    rank1 = members["rank 1"]
    started = members["engine"].started
    assert send_signal(root.pid, started, rank1.pid, rank1.started, signal.SIGUSR1) == ""
    _until(lambda: len(_signals(record)) > before, 10)
    assert _signals(record)[-1] == "SIGUSR1"


def test_signal_refused_outside_the_tree(tree):
    root, _ = tree
    members = _members(root.pid)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        from fontaine_tui.core.run.launcher import process_started

        why = send_signal(
            root.pid,
            members["engine"].started,
            stranger.pid,
            process_started(stranger.pid) or 0.0,
            signal.SIGTERM,
        )
        assert why == f"pid {stranger.pid} is not in the run's process tree"
        time.sleep(0.2)
        assert stranger.poll() is None  # not signalled
    finally:
        stranger.kill()
        stranger.wait(10)


def test_signal_refused_for_a_stale_or_recycled_pid(tree):
    root, record = tree
    members = _members(root.pid)
    rank1, started = members["rank 1"], members["engine"].started
    before = len(_signals(record))
    # the pid now names a process started at another time: a recycled pid
    why = send_signal(root.pid, started, rank1.pid, rank1.started + 5, signal.SIGUSR1)
    assert why == f"pid {rank1.pid} is another process now (started at another time)"
    # the root's pid reused: nothing under it is the run's
    why = send_signal(root.pid, started - 5, rank1.pid, rank1.started, signal.SIGUSR1)
    assert why == f"process {root.pid} is not the run's any more (its pid was reused)"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(10)
    why = send_signal(root.pid, started, gone.pid, rank1.started, signal.SIGUSR1)
    assert why == f"process {gone.pid} is gone"
    time.sleep(0.3)
    assert len(_signals(record)) == before  # none of them reached the rank


def test_a_child_left_unreaped_shows_as_a_zombie():
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'pass'])\n"
            "time.sleep(60)\n",
        ]
    )
    try:
        members: list = []

        def zombie() -> bool:
            members[:] = TreeLook().look(parent.pid, gpus=NO_GPU).members
            return len(members) == 2 and members[1].state == "zombie"

        _until(zombie, 20)
        assert members[1].ppid == parent.pid and members[1].depth == 1
    finally:
        parent.kill()
        parent.wait(10)
