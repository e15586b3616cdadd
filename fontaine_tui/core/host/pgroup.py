"""A run's process group left running once its first process is gone, and whether it is the run's.

A run starts in a session of its own, so its process group's id is the pid of its first
process, the one attempts.jsonl records. That process can die first (kill -9 of that pid)
while what it started goes on in the group: a trainer that ignores the SIGTERM exitnote's
child gets when its parent dies, torchrun's ranks. Linux gives no new process that pid while
the group has a member, so the group is still found by it. It is the run's only where each
member is in the session that pid made and started after the run's attempt began: a group
that fails either is never signalled.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

SAME_START_S = 1.0  # as pids.pid_alive: psutil's start times can move by the boot time's second


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One live process of the group."""

    pid: int
    session: int
    started: float  # psutil's create_time


def left_in(pgid: int) -> tuple[GroupMember, ...]:
    """The live members of process group `pgid`, oldest first; zombies are left out."""
    if pgid <= 1:
        return ()
    try:
        os.killpg(pgid, 0)  # one call says whether the group has anyone at all
    except ProcessLookupError:
        return ()
    except PermissionError:
        pass  # someone's: looked at below, then refused by `untied`
    import psutil

    out = []
    for pid in psutil.pids():
        try:
            if os.getpgid(pid) != pgid:
                continue
            p = psutil.Process(pid)
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
            out.append(GroupMember(pid, os.getsid(pid), p.create_time()))
        except (OSError, psutil.Error):  # gone meanwhile, or not ours to read
            continue
    return tuple(sorted(out, key=lambda m: (m.started, m.pid)))


def left_without(pgid: int) -> tuple[GroupMember, ...]:
    """The members left in the group pid `pgid` made, once no live process holds that pid.

    () while one does (the run's own process, or a later one given its pid): the group it
    made is then its own, or over."""
    from fontaine_tui.core.host.pids import process_started

    if pgid <= 1 or pgid == os.getpgrp() or process_started(pgid) is not None:
        return ()
    return left_in(pgid)


def runs_on(pgid: int, started: float | None) -> tuple[GroupMember, ...]:
    """The members left in the group pid `pgid` made (`left_without`), where they are the run's.

    `started` is the start time the run recorded for that pid (`untied`)."""
    members = left_without(pgid)
    return () if untied(pgid, started, members) else members


def untied(pgid: int, started: float | None, members: Sequence[GroupMember]) -> str:
    """'' when `members` are of the session pid `pgid` made, started at `started`; else why not."""
    if started is None:
        return (
            f"no start time is recorded for pid {pgid}, so its group cannot be told from "
            "a later one"
        )
    for m in members:
        if m.session != pgid:
            return f"pid {m.pid} is in session {m.session}, not in the one pid {pgid} made"
        if m.started < started - SAME_START_S:
            return f"pid {m.pid} started {started - m.started:.1f} s before the run's attempt"
    return ""


def pids_text(members: Sequence[GroupMember], most: int = 5) -> str:
    """The members' pids in words: "pid 7", "pids 7, 9", "pids 7, 9, ... (12 in all)"."""
    pids = [str(m.pid) for m in members]
    if len(pids) == 1:
        return f"pid {pids[0]}"
    shown = ", ".join(pids[:most])
    return f"pids {shown}" + (f", ... ({len(pids)} in all)" if len(pids) > most else "")
