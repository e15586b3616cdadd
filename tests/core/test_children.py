"""A child started on the event loop never hangs a cancel, and is always waited for.

Closing a loop (asyncio.run, the test runner) cancels every task at once. With
asyncio.create_subprocess_exec on Python 3.11, a cancel that lands while a child is being
made can leave that task waiting for ever (CPython issues 103847, 125502): the suite's hang
in the SSH console test's teardown. These tests cancel every task at each point of a start.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest

from fontaine_tui.core import children
from tests.core.follow.test_ssh import source
from tests.sshd_helper import processes_mentioning

BOUND_S = 5.0


def mine(marker: str) -> list[psutil.Process]:
    """This process's children whose command line holds `marker`, zombies too."""
    out = []
    for p in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            if marker in " ".join(p.cmdline()) or p.status() == psutil.STATUS_ZOMBIE:
                out.append(p)
    return out


async def cancel_all_after(start, yields: int) -> None:
    """Start `start()` as a task, let the loop turn `yields` times, then cancel every task but
    this one, as a loop's close does; all must end within BOUND_S."""
    task = asyncio.create_task(start())
    for _ in range(yields):
        await asyncio.sleep(0)
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for t in others:
        t.cancel()
    if others:  # none: the start was over before the cancel
        _, pending = await asyncio.wait(others, timeout=BOUND_S)
        assert not pending, f"cancelled {yields} turns into the start, still waiting: {pending}"
    if not task.cancelled() and task.exception() is None:
        result = task.result()
        if isinstance(result, children.Child):
            await children.end(result)


@pytest.mark.parametrize("yields", range(0, 8))
async def test_cancelling_every_task_while_a_child_starts_hangs_nothing(yields):
    await cancel_all_after(lambda: children.spawn("sleep", "30.5", stdin=children.PIPE), yields)
    deadline = time.monotonic() + BOUND_S
    while mine("30.5") and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert mine("30.5") == []  # killed and reaped


async def test_wait_is_the_exit_even_while_another_process_holds_the_pipes():
    """A grandchild keeps the pipes open (as an ssh master does): wait() still returns."""
    child = await children.spawn("sh", "-c", "sleep 30.7 & exit 3")
    try:
        assert await asyncio.wait_for(child.wait(), BOUND_S) == 3
        assert child.stdout is not None
        with pytest.raises(asyncio.TimeoutError):  # the grandchild still holds stdout
            await asyncio.wait_for(child.stdout.read(), 0.3)
    finally:
        for p in processes_mentioning("30.7", "sleep"):  # the grandchild, init's by now
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        await children.end(child)


async def test_end_takes_at_most_twice_its_grace_with_a_child_that_ignores_eof():
    ignores = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(30.9)"
    child = await children.spawn(sys.executable, "-c", ignores, stdin=children.PIPE)
    await asyncio.sleep(0.5)  # its handler is set
    started = time.monotonic()
    code = await children.end(child, grace_s=0.5, first=signal.SIGTERM)
    assert time.monotonic() - started <= 1.5
    assert code == -9  # killed, after the TERM it ignored


async def test_end_cancelled_during_its_grace_still_kills_the_child():
    ignores = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(31.3)"
    child = await children.spawn(sys.executable, "-c", ignores)
    await asyncio.sleep(0.5)  # its handler is set
    ending = asyncio.create_task(children.end(child, grace_s=5, first=signal.SIGTERM))
    await asyncio.sleep(0.2)
    ending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await ending
    assert await asyncio.wait_for(child.wait(), BOUND_S) == -9


@pytest.mark.ssh
@pytest.mark.parametrize("yields", range(0, 30, 3))
async def test_cancelling_every_task_during_a_remote_command_hangs_nothing(
    sshd, tmp_path: Path, yields
):
    run = source(sshd, tmp_path)
    try:
        await run.shell("true")  # the shared connection is up: the next start is the client's
        await cancel_all_after(lambda: run.shell("sleep 31.1"), yields)
    finally:
        await asyncio.wait_for(run.close(), BOUND_S + 10)
        for p in processes_mentioning("31.1", "sleep"):  # it runs on "there": ended by hand
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
