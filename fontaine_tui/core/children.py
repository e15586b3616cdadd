"""End a child process started with asyncio, and wait for it, within a bound.

Every asyncio child the program starts (an ssh client, a re-score) ends through `end`, also
from a task that is being cancelled (a console quitting, a follower mid-reconnect): it never
waits without a bound, and the child is waited for, so none is left a zombie.

Why a bound is needed at all: on Python 3.11 `Process.wait()` returns only once the child has
exited *and* every pipe to it is closed. An ssh client run over a shared connection
(ControlMaster) hands its pipes to the master process, which keeps them open after the client
dies, until the remote end closes its channel; a wait on the client could then last as long
as the connection. `end` closes this side's ends of the pipes after the kill, so the exit
alone ends the wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

# how long `end` gives a child to go by itself once its stdin is closed, and again after the
# kill: a cancelled task that ends its children is over within twice this
GRACE_S = 2.0


async def _exited(proc: asyncio.subprocess.Process, seconds: float) -> bool:
    """Whether `proc` has exited within `seconds` (its pipes aside once they are closed)."""
    if proc.returncode is not None:
        return True
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(proc.wait(), seconds)
    return proc.returncode is not None


def _close_pipes(proc: asyncio.subprocess.Process) -> None:
    """Close this side of the child's pipes, so its exit alone ends a wait on it."""
    transport = getattr(proc, "_transport", None)
    if transport is None:
        return
    for kind in (0, 1, 2):
        pipe = transport.get_pipe_transport(kind)
        if pipe is not None:
            pipe.close()


async def end(
    proc: asyncio.subprocess.Process,
    grace_s: float = GRACE_S,
    group: bool = False,
    first: signal.Signals | None = None,
) -> int | None:
    """End `proc` and wait for it; its exit status, or None if it outlived the bound.

    Its stdin is closed first and it gets `grace_s` to exit by itself (or after the signal
    `first`, for example SIGTERM); then it is killed (with `group`, its whole process group,
    for a child started in a session of its own) and waited for `grace_s` more. Safe to await
    from a task being cancelled: it takes at most 2 × `grace_s`.
    """
    if proc.returncode is None:
        if proc.stdin is not None:
            proc.stdin.close()
        if first is not None:
            _signal(proc, first, group)
        if not await _exited(proc, grace_s):
            _signal(proc, signal.SIGKILL, group)
    _close_pipes(proc)
    await _exited(proc, grace_s)
    return proc.returncode


def _signal(proc: asyncio.subprocess.Process, sig: signal.Signals, group: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:
            os.killpg(proc.pid, sig)  # its own session: the group id is its pid
        else:
            proc.send_signal(sig)
