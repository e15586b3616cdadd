"""The engine tree's memory counts a page its processes share once (PSS), not once a process.

A real parent fills a 200 MiB buffer, then forks children that share it (copy on write,
never written again): the RSS of the tree sums it once a process, the PSS once in all. The
telemetry sample, the recorder's line and the processes mode all give the PSS figure, and say
so; a process whose smaps_rollup cannot be read is given as its RSS and said to be."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from fontaine_tui.core.host.memory import Footprint, parse_rollup, process_memory, summed
from fontaine_tui.core.host.proctree import TreeLook
from fontaine_tui.core.host.recorder import sample_line
from fontaine_tui.core.host.telemetry import sample_process

MIB = 1 << 20
BUFFER = 200 * MIB
CHILDREN = 4
NO_GPU = (None, "NVML: library not found")
PARENT = f"""
import os, sys, time
buf = bytearray({BUFFER})
for i in range(0, len(buf), 4096):  # every page touched, so each is in memory, then shared
    buf[i] = 1
for _ in range({CHILDREN}):
    if os.fork() == 0:
        time.sleep(120)
        os._exit(0)
print("ready", flush=True)
time.sleep(120)
"""


@pytest.fixture(scope="module")
def shared_tree():
    """A parent and CHILDREN forked children sharing a 200 MiB buffer; the parent's pid."""
    if not Path(f"/proc/{os.getpid()}/smaps_rollup").exists():
        pytest.skip("no /proc/PID/smaps_rollup here (Linux 4.14 or later)")
    proc = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        deadline = time.monotonic() + 20
        while len(psutil.Process(proc.pid).children()) < CHILDREN:
            assert time.monotonic() < deadline, "the children did not start"
            time.sleep(0.05)
        yield proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the parent and its children
        proc.wait(10)


def tree_rss(pid: int) -> int:
    top = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [top, *top.children(recursive=True)])


def about_once(value: int) -> bool:
    """The buffer counted once, with the interpreters' own pages: not twice or more."""
    return BUFFER * 0.9 < value < BUFFER * 1.6


def test_the_tree_sums_rss_once_a_process_and_pss_once(shared_tree) -> None:
    assert tree_rss(shared_tree) > (CHILDREN + 1) * BUFFER * 0.9  # the buffer N times over
    sample, why = sample_process(shared_tree)
    assert why == "" and sample is not None and sample.processes == CHILDREN + 1
    assert sample.mem_kind == "PSS" and about_once(sample.mem), sample.mem / MIB


def test_the_recorder_writes_the_pss_figure(shared_tree, tmp_path: Path) -> None:
    engine = sample_line(tmp_path, shared_tree, "0")["engine"]
    assert engine["mem_kind"] == "PSS" and about_once(engine["mem"]), engine
    assert "rss" not in engine


def test_the_processes_mode_gives_each_member_its_share(shared_tree) -> None:
    tree = TreeLook().look(shared_tree, gpus=NO_GPU)
    assert len(tree.members) == CHILDREN + 1
    assert {m.mem_kind for m in tree.members} == {"PSS"}
    assert about_once(sum(m.mem or 0 for m in tree.members))


def test_one_function_owns_the_figure(shared_tree) -> None:
    """The sample's figure is the sum of process_memory over the tree, as the processes mode's."""
    top = psutil.Process(shared_tree)
    parts = [process_memory(p.pid) for p in [top, *top.children(recursive=True)]]
    total = summed([p for p in parts if p is not None])
    assert total.kind == "PSS" and about_once(total.bytes)


def test_rollup_text_pss_else_uss_and_the_kinds_of_a_sum() -> None:
    text = "Rss:  400 kB\nPss:  100 kB\nPrivate_Clean:  8 kB\nPrivate_Dirty:  40 kB\n"
    assert parse_rollup(text) == Footprint(100 << 10, "PSS")
    assert parse_rollup(text.replace("Pss:", "Xss:")) == Footprint(48 << 10, "USS")
    assert parse_rollup("garbage") is None
    assert summed([Footprint(1, "PSS"), Footprint(2, "RSS"), Footprint(3, "PSS")]) == Footprint(
        6, "PSS+RSS"
    )
    assert summed([]) == Footprint(0, "PSS")


def _python_for(user: str) -> str | None:
    """An interpreter `user` may run (this one may lie under a folder closed to others)."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        try:
            probe = subprocess.run([candidate, "-c", "pass"], user=user, capture_output=True)
        except OSError:  # not there, or under a folder `user` may not enter
            continue
        if probe.returncode == 0:
            return candidate
    return None


def test_another_users_process_is_given_as_its_rss_and_said_so(shared_tree) -> None:
    """smaps_rollup of another user's process cannot be read: its RSS (statm), said "RSS"."""
    if os.geteuid() != 0:
        pytest.skip("only root can look as another user here")
    python = _python_for("nobody")
    if python is None:
        pytest.skip("no python that the user nobody may run")
    root = Path(__file__).resolve().parents[3]
    code = (
        f"import sys; sys.path.insert(0, {str(root)!r}); "
        "from fontaine_tui.core.host.memory import process_memory; "
        f"m = process_memory({shared_tree}); print(m.kind, m.bytes)"
    )
    res = subprocess.run(
        [python, "-c", code], user="nobody", capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    kind, size = res.stdout.split()
    assert kind == "RSS" and int(size) > BUFFER * 0.9  # the whole buffer: RSS, not a share


def test_a_gone_process_has_no_figure() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert process_memory(proc.pid) is None
