"""A cancelled follow over SSH ends within a bound, whatever the remote side does.

The remote side here is frozen (SIGSTOP), as a host with a hung file system would be: its
stream never sees its stdin close, so the shared connection's master keeps the ssh client's
pipes open. A cancelled follower (a console quitting, a test ending) must still end at once,
and leave no ssh client of its own behind, neither running nor unreaped.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from pathlib import Path

import psutil
import pytest

from tests.core.follow.followkit import append, train_line
from tests.core.follow.test_ssh import LOG, source, tails_for
from tests.sshd_helper import processes_mentioning, ssh_children

pytestmark = pytest.mark.ssh

# a cancelled task that ends its children is over within twice their grace (2 s each)
BOUND_S = 5.0


@contextlib.contextmanager
def frozen(procs: list[psutil.Process]):
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        for p in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.send_signal(signal.SIGCONT)


async def test_a_cancelled_follow_ends_with_the_remote_side_frozen(sshd, tmp_path: Path):
    append(tmp_path / LOG, b"".join(train_line(s) for s in range(1, 4)))
    run = source(sshd, tmp_path)
    seen = asyncio.Event()

    async def follow() -> None:
        async for batch in run.follow():
            if batch.lines:
                seen.set()

    task = asyncio.create_task(follow())
    try:
        await asyncio.wait_for(seen.wait(), 30)
        remote = tails_for(tmp_path)
        assert remote, "the remote stream was not found"
        with frozen(remote):
            started = time.monotonic()
            task.cancel()
            done, _ = await asyncio.wait([task], timeout=BOUND_S + 5)
            took = time.monotonic() - started
            assert done, f"the cancelled follow did not end in {BOUND_S + 5:g} s"
            assert took <= BOUND_S, f"the cancelled follow took {took:.1f} s"
            # its ssh client was killed and waited for: none running, none a zombie
            assert ssh_children() == []
    finally:
        task.cancel()
        await run.close()


async def test_a_cancelled_remote_command_leaves_no_ssh_client(sshd, tmp_path: Path):
    run = source(sshd, tmp_path)
    try:
        task = asyncio.create_task(run.shell("sleep 600.3"))
        deadline = time.monotonic() + 60
        while not processes_mentioning("600.3", "sleep") and time.monotonic() < deadline:
            assert not task.done(), task  # its error, if it failed to start
            await asyncio.sleep(0.05)
        assert processes_mentioning("600.3", "sleep"), "the remote command did not start"
        assert ssh_children(), "the remote command's ssh client is not running here"
        started = time.monotonic()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, BOUND_S + 5)
        assert time.monotonic() - started <= BOUND_S
        assert ssh_children() == []
    finally:
        await run.close()
        for p in processes_mentioning("600.3", "sleep"):  # it runs on "there": ended by hand
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
