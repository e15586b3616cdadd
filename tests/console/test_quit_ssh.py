"""Quitting a console that follows a run over SSH ends within 5 s, whatever the host does.

Two hosts that do not answer: one whose processes are frozen mid-stream (a hung file system),
one whose sshd is gone, so the follower is reconnecting. Either way `q` ends the console and
every task it started within QUIT_BOUND_S, and no ssh client of the console's is left,
running or unreaped.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time

import psutil
import pytest

from fontaine_tui.console import make_app
from fontaine_tui.core.follow.ssh import SshRun
from fontaine_tui.core.ssh.destination import SshTarget
from tests.console.conftest import SIZE, fixed_clock, make_run, until
from tests.sshd_helper import HOST_ALIAS, Sshd, ssh_children

pytestmark = pytest.mark.ssh

QUIT_BOUND_S = 5.0


def names(procs: list[psutil.Process]) -> set[str]:
    out = set()
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            out.add(p.name())
    return out


def remote_processes(server: Sshd) -> list[psutil.Process]:
    """What the host runs for its logged-in clients (the follow scripts), not sshd itself."""
    out = []
    for conn in server.connection_processes():
        with contextlib.suppress(psutil.NoSuchProcess):
            out += [p for p in conn.children(recursive=True) if "sshd" not in p.name()]
    return out


@pytest.mark.parametrize("host", ["frozen", "gone"])
async def test_quit_ends_within_its_bound_when_the_host_does_not_answer(tmp_path, preset, host):
    server = Sshd(tmp_path / "sshd").start()
    folder = tmp_path / "run"
    make_run(folder, upto=600)
    source = SshRun(
        SshTarget(HOST_ALIAS, str(folder)), ssh_options=server.ssh_options, backoff=(0.1, 1.0)
    )
    app = make_app(source=source, preset=preset, clock=fixed_clock, kind="attach")
    frozen: list[psutil.Process] = []
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.session.store.last_step == 600, 30)
            if host == "frozen":
                # the log's stream running there (python3 under its script), then frozen
                await until(pilot, lambda: "python3" in names(remote_processes(server)), 30)
                frozen = remote_processes(server)
                for p in frozen:
                    with contextlib.suppress(psutil.NoSuchProcess):
                        p.send_signal(signal.SIGSTOP)
            else:
                server.stop()  # the listener and every connection: the follower reconnects
                await until(pilot, lambda: source.reconnects > 0, 30)
            started = time.monotonic()
            await pilot.press("q")
        # the console is closed; what it started on this loop ends with it
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        left = max(0.0, QUIT_BOUND_S - (time.monotonic() - started))
        if others:
            await asyncio.wait(others, timeout=left)
        took = time.monotonic() - started
        pending = [t for t in others if not t.done()]
        assert not pending, f"still running {took:.1f} s after q: {pending}"
        assert took <= QUIT_BOUND_S, f"the quit took {took:.1f} s"
        assert ssh_children() == []
    finally:
        for p in frozen:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.send_signal(signal.SIGCONT)
        server.stop()
