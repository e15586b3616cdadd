"""The program's child processes on the event loop: started, ended and waited for, in bounds.

Every child the console, the follower and the launcher run on the event loop (an ssh client,
a re-score) starts with `spawn` and ends with `end`. Neither can hang a task that is being
cancelled (a console quitting, a follower mid-reconnect, a test's loop closing), and no
child is left a zombie.

Why not asyncio.create_subprocess_exec: on Python 3.11 its process has two ways to wait for
ever.
- Cancelling the tasks of a loop while a child is being made (as asyncio.run and the test
  runner do when they close a loop) can leave its wait() pending for good: the task that
  connects the child's pipes is cancelled before it runs, and the wake-up of every wait is
  queued behind it (CPython issues 103847 and 125502).
- Its wait() returns only once the child has exited *and* every pipe to it is closed. An
  ssh client run over a shared connection (ControlMaster) hands its pipes to the master,
  which keeps them open after the client dies, as long as the remote side lives.
A `Child` is a subprocess.Popen whose exit a thread waits for (as asyncio's own child watcher
does), and whose stdout and stderr are asyncio streams: its `wait()` is its exit alone, and
nothing in its start is a task that a cancel could leave half done.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from typing import IO, Any

from fontaine_tui.core.childenv import child_env

# how long `end` gives a child to go by itself once its stdin is closed, and again after the
# kill: a cancelled task that ends its children is over within twice this
GRACE_S = 2.0
LIMIT = 2**16  # a stream's buffer, as asyncio's default

PIPE = subprocess.PIPE
DEVNULL = subprocess.DEVNULL


class Child:
    """A child process on the event loop: `spawn` makes one.

    Like asyncio's Process: `pid`, `returncode`, `stdin` (a file: close() it to send EOF),
    `stdout` and `stderr` (asyncio StreamReaders, or None), `wait()`, `communicate()`,
    `send_signal()`, `kill()`. Unlike it, `wait()` returns when the child has exited, whoever
    still holds its pipes."""

    def __init__(self, popen: subprocess.Popen[bytes], loop: asyncio.AbstractEventLoop) -> None:
        self._popen, self._loop = popen, loop
        self.pid = popen.pid
        self.stdin: IO[bytes] | None = popen.stdin
        self.stdout: asyncio.StreamReader | None = None
        self.stderr: asyncio.StreamReader | None = None
        self._pipes: list[asyncio.BaseTransport] = []
        self._exit: asyncio.Future[int] = loop.create_future()
        watcher = threading.Thread(target=self._watch, name=f"child {popen.pid}", daemon=True)
        watcher.start()

    def _watch(self) -> None:
        """In a thread: wait for the exit (the child is reaped here), then tell the loop."""
        code = self._popen.wait()
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            self._loop.call_soon_threadsafe(self._exited, code)

    def _exited(self, code: int) -> None:
        if not self._exit.done():
            self._exit.set_result(code)

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def wait(self) -> int:
        """The exit status, once the child has exited (its pipes aside)."""
        return await asyncio.shield(self._exit)

    async def communicate(self) -> tuple[bytes, bytes]:
        """Everything it writes to stdout and stderr until both close, then its exit."""

        async def whole(stream: asyncio.StreamReader | None) -> bytes:
            return await stream.read() if stream is not None else b""

        out, err = await asyncio.gather(whole(self.stdout), whole(self.stderr))
        await self.wait()
        return out, err

    def send_signal(self, sig: int, group: bool = False) -> None:
        """Signal the child (with `group`, its process group: a child in a session of its own).

        A child already waited for is not signalled: its pid may be another's by now."""
        if self._popen.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group:
                os.killpg(self.pid, sig)  # its own session: the group id is its pid
            else:
                os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def close_pipes(self) -> None:
        """Close this side of its pipes, so nothing here waits on them any more."""
        if self.stdin is not None:
            with contextlib.suppress(OSError):
                self.stdin.close()
        for pipe in self._pipes:
            pipe.close()

    async def _connect(self, limit: int) -> None:
        for name in ("stdout", "stderr"):
            f = getattr(self._popen, name)
            if f is None:
                continue
            reader = asyncio.StreamReader(limit=limit, loop=self._loop)
            protocol = asyncio.StreamReaderProtocol(reader, loop=self._loop)
            transport, _ = await self._loop.connect_read_pipe(_made(protocol), f)
            self._pipes.append(transport)
            setattr(self, name, reader)


def _made(protocol: asyncio.StreamReaderProtocol) -> Callable[[], asyncio.StreamReaderProtocol]:
    """A protocol factory that gives `protocol`."""
    return lambda: protocol


async def spawn(
    *argv: str,
    stdin: int | IO[Any] | None = DEVNULL,
    stdout: int | IO[Any] | None = PIPE,
    stderr: int | IO[Any] | None = PIPE,
    limit: int = LIMIT,
    env: Mapping[str, str] | None = None,
    **popen: Any,
) -> Child:
    """Start `argv` as a `Child` (other keywords go to subprocess.Popen: cwd, ...).

    Its environment is `env` (this process's when None) less every secret (child_env).
    Cancelled while its pipes are being connected, the child is killed and reaped, and the
    cancel goes on."""
    loop = asyncio.get_running_loop()
    proc = subprocess.Popen(
        list(argv), stdin=stdin, stdout=stdout, stderr=stderr, env=child_env(env), **popen
    )
    child = Child(proc, loop)
    try:
        await child._connect(limit)
    except BaseException:
        child.kill()  # its thread reaps it
        child.close_pipes()
        for f in (proc.stdout, proc.stderr):
            if f is not None:
                f.close()
        raise
    return child


async def _exited(child: Child, seconds: float) -> bool:
    """Whether `child` has exited within `seconds`."""
    if child.returncode is not None:
        return True
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(child.wait(), seconds)
    return child.returncode is not None


async def end(
    child: Child,
    grace_s: float = GRACE_S,
    group: bool = False,
    first: signal.Signals | None = None,
) -> int | None:
    """End `child` and wait for it; its exit status, or None if it outlived the bound.

    Its stdin is closed first and it gets `grace_s` to exit by itself (or after the signal
    `first`, for example SIGTERM); then it is killed (with `group`, its whole process group)
    and waited for `grace_s` more. Its pipes are closed on this side. Safe to await from a
    task being cancelled: it takes at most 2 × `grace_s`."""
    try:
        if child.returncode is None:
            if child.stdin is not None:
                with contextlib.suppress(OSError):
                    child.stdin.close()
            if first is not None:
                child.send_signal(first, group)
            await _exited(child, grace_s)
    finally:  # gone by itself, or its grace cut short by a cancel: the rest is killed
        child.send_signal(signal.SIGKILL, group)  # nothing once it has exited
        child.close_pipes()
    await _exited(child, grace_s)
    return child.returncode
