"""No test can hang the suite: each has a time bound, and one past it fails with its stacks.

pytest-timeout gives every test (setup, call and teardown together) the bound set in
pyproject.toml (`timeout`); a test marked slow or engine gets LONG_S unless it names its own
with `@pytest.mark.timeout(N)`. Past the bound, this plugin's timer writes the test's name, the
stack of every thread and of every asyncio task still pending on the test's event loop to the
worker's stderr (which reaches the CI log), then ends the worker process: pytest-xdist
reports the test as failed ("worker crashed") and starts a new worker for the rest. A hung
test thus costs its bound, not the CI's 90 minutes.

An asyncio task that does not end when cancelled (the hang this guards against) shows in the
dump under "asyncio tasks", with the line it waits on.

A test that leaves a child of the worker exited but never waited for (a zombie) fails too
(`no_unreaped_child`).
"""

from __future__ import annotations

import asyncio
import io
import os
import sys
import threading
import time
import traceback

import pytest

# the bound of a test marked slow or engine (a real engine run, a real cluster, a real trainer)
LONG_S = 600
# how long a child that has exited may wait to be waited for after its test (no_unreaped_child)
ZOMBIE_GRACE_S = 2.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give the long tests (marked slow or engine) LONG_S unless they name their own bound."""
    for item in items:
        if item.get_closest_marker("timeout") is not None:
            continue
        if item.get_closest_marker("slow") or item.get_closest_marker("engine"):
            item.add_marker(pytest.mark.timeout(LONG_S))


def _loops() -> list[asyncio.AbstractEventLoop]:
    """The event loops found on any thread's stack (the test's, Textual's)."""
    found: dict[int, asyncio.AbstractEventLoop] = {}
    for frame in sys._current_frames().values():
        f = frame
        while f is not None:
            loop = f.f_locals.get("self")
            if isinstance(loop, asyncio.AbstractEventLoop):
                found[id(loop)] = loop
            f = f.f_back
    return list(found.values())


def _awaiting(coro: object) -> list:
    """The frames of a coroutine and of each one it awaits in turn, outermost first."""
    frames = []
    for _ in range(100):  # a chain is never this deep; a cycle would be
        if coro is None:
            break
        frame = next(
            (getattr(coro, a) for a in ("cr_frame", "gi_frame", "ag_frame") if hasattr(coro, a)),
            None,
        )
        if frame is not None:
            frames.append(frame)
        coro = next(
            (
                getattr(coro, a)
                for a in ("cr_await", "gi_yieldfrom", "ag_await")
                if hasattr(coro, a)
            ),
            None,
        )
    return frames


def dump(nodeid: str, seconds: float) -> str:
    """What a hung test was doing: every thread's stack, then every pending asyncio task's."""
    out = io.StringIO()
    out.write(f"\n{'+' * 30} Timeout: {nodeid} ran past {seconds:g} s {'+' * 30}\n")
    me = threading.get_ident()
    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        if ident == me:
            continue
        out.write(f"--- thread {names.get(ident, '?')} ({ident})\n")
        out.write("".join(traceback.format_stack(frame)))
    for loop in _loops():
        try:
            tasks = list(asyncio.all_tasks(loop))
        except RuntimeError:  # the set changed while read from this thread: once more
            tasks = list(asyncio.all_tasks(loop))
        out.write(f"--- asyncio tasks of {loop!r}: {len(tasks)} pending\n")
        for task in tasks:
            out.write(f"{task!r}\n")
            for frame in _awaiting(task.get_coro()):
                out.write("".join(traceback.format_stack(frame, limit=1)))
    out.write(f"{'+' * 30} Timeout: {nodeid} {'+' * 30}\n")
    return out.getvalue()


def _expire(item: pytest.Item, seconds: float) -> None:
    try:
        text = dump(item.nodeid, seconds)
        capman = item.config.pluginmanager.getplugin("capturemanager")
        if capman is not None:  # fd 2 is pytest's capture file until this
            capman.suspend_global_capture(in_=True)
        sys.stderr.write(text)  # the worker's own stderr: the CI log
        sys.stderr.flush()
    finally:
        os._exit(1)


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings) -> bool | None:
    """Start the test's timer: past its bound, `dump` the stacks and end the worker."""
    if not settings.timeout or settings.timeout <= 0:
        return None
    timer = threading.Timer(settings.timeout, _expire, (item, settings.timeout))
    timer.name = f"timeout {item.nodeid}"
    timer.daemon = True

    def cancel() -> None:
        timer.cancel()
        timer.join()

    item.cancel_timeout = cancel  # type: ignore[attr-defined]
    timer.start()
    return True


def _children() -> set[int]:
    import psutil

    return {child.pid for child in psutil.Process().children()}


def _zombies(besides: set[int]) -> dict[int, str]:
    """This process's children not in `besides` that have exited and were not waited for:
    {pid: name}."""
    import psutil

    out = {}
    for child in psutil.Process().children():
        try:
            if child.pid not in besides and child.status() == psutil.STATUS_ZOMBIE:
                out[child.pid] = child.name()
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.fixture(autouse=True)
def no_unreaped_child(request: pytest.FixtureRequest):
    """Fail a test that leaves a child it started exited but never waited for (a zombie).

    Set up after the module's and session's fixtures and before the test's own, so checked
    after all of the test's are torn down; a child that was there before (a module fixture's,
    waited for in a later test) is not the test's. A child gets ZOMBIE_GRACE_S to be waited
    for by whoever started it (asyncio's child watcher waits in a thread). It is not reaped
    here: whoever holds it may still want its exit status."""
    before = _children()
    yield
    deadline = time.monotonic() + ZOMBIE_GRACE_S
    left = _zombies(before)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _zombies(before)
    if left:
        pytest.fail(
            f"{request.node.nodeid} left {len(left)} child process(es) exited but never "
            f"waited for (zombies): {sorted(left.items())}",
            pytrace=False,
        )
