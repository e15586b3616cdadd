"""A process group left running once its first process is killed with SIGKILL.

A real session leader starts a child that ignores SIGTERM, in its group; the leader is
killed with SIGKILL and reaped. The child is then found by the group's id (the dead
leader's pid), in the leader's session, started after it; a start time recorded later than
the child's, or a member of another session, unties the group from the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace

import psutil
import pytest

from fontaine_tui.core.host import pgroup

LEADER = """import os, signal, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(120)")])
print(child.pid, flush=True)
time.sleep(120)
"""


@pytest.fixture
def orphaned() -> Iterator[tuple[int, float, int]]:
    """(the dead leader's pid, its start time, its child's pid), the child still running."""
    leader = subprocess.Popen(
        [sys.executable, "-c", LEADER],
        start_new_session=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        started = psutil.Process(leader.pid).create_time()
        assert leader.stdout is not None
        child = int(leader.stdout.readline())
        assert leader.stdout.readline().strip() == "ready"  # its handler is set
        leader.kill()
        leader.wait()
        yield leader.pid, started, child
    finally:
        try:
            os.killpg(leader.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        leader.wait()


def test_the_members_left_are_found_by_the_dead_leaders_pid(orphaned) -> None:
    pgid, started, child = orphaned
    assert not psutil.pid_exists(pgid)  # the leader is gone, and no process took its pid
    members = pgroup.left_in(pgid)
    assert [m.pid for m in members] == [child]
    assert members[0].session == pgid and members[0].started >= started - pgroup.SAME_START_S
    assert pgroup.untied(pgid, started, members) == ""
    assert pgroup.pids_text(members) == f"pid {child}"


def test_a_member_older_than_the_recorded_start_or_of_another_session_unties_it(
    orphaned,
) -> None:
    pgid, started, child = orphaned
    members = pgroup.left_in(pgid)
    later = pgroup.untied(pgid, started + 30, members)  # an attempt said to begin 30 s later
    assert later.startswith(f"pid {child} started ") and "before the run's attempt" in later
    assert "no start time" in pgroup.untied(pgid, None, members)
    elsewhere = (replace(members[0], session=members[0].session + 1),)
    assert f"not in the one pid {pgid} made" in pgroup.untied(pgid, started, elsewhere)


def test_a_group_whose_members_ended_has_none_left(orphaned) -> None:
    pgid, _, child = orphaned
    os.kill(child, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while pgroup.left_in(pgid):  # a zombie until its new parent reaps it: never a member
        assert time.monotonic() < deadline, "the killed child is still listed"
        time.sleep(0.05)
    assert pgroup.left_in(1) == () and pgroup.left_in(0) == ()


def test_many_pids_are_said_in_short() -> None:
    members = [pgroup.GroupMember(p, 1, 0.0) for p in range(10, 22)]
    assert pgroup.pids_text(members) == "pids 10, 11, 12, 13, 14, ... (12 in all)"
    assert pgroup.pids_text(members[:2]) == "pids 10, 11"


def test_no_group_is_left_without_a_process_that_still_holds_its_pid(orphaned) -> None:
    """The dead leader's group is left without it; a live leader's (this test's own, a
    running sleeper's) is its own, never "left"."""
    pgid, _, child = orphaned
    assert [m.pid for m in pgroup.left_without(pgid)] == [child]
    assert pgroup.left_without(os.getpgrp()) == ()
    sleeper = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert pgroup.left_in(sleeper.pid) and pgroup.left_without(sleeper.pid) == ()
    finally:
        sleeper.kill()
        sleeper.wait()
