"""Whether a process is still the one a run recorded: its pid and its start time.

A pid is given again to a later process; its start time tells the two apart. A leaf: the
launch modules that find a run's process again (the launcher, attempts.jsonl's reader, the
registry) import it without importing each other.
"""

from __future__ import annotations


def process_started(pid: int, zombie_ok: bool = False) -> float | None:
    """The process's start time, which distinguishes it from a later process given the same pid.

    A zombie has none unless `zombie_ok`: our own unreaped child keeps its pid and start time."""
    import psutil

    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE and not zombie_ok:
            return None
        return p.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def pid_alive(pid: int, started: float | None = None) -> bool:
    """Is `pid` running, and (if `started` is given) the same process as when registered?"""
    if pid <= 0:
        return False
    now_started = process_started(pid)
    if now_started is None:
        return False
    return started is None or abs(now_started - started) < 1.0
