"""A remote command that stops answering is cut after its timeout (SshRun._exec), against the
real sshd on 127.0.0.1: one line naming the wait, the ssh client killed, the shared connection
still good for the next command."""

from __future__ import annotations

import time

import psutil
import pytest

from fontaine_tui.core.follow.ssh import SshRun
from fontaine_tui.core.ssh.connection import SshError
from fontaine_tui.core.ssh.destination import SshTarget
from tests.sshd_helper import HOST_ALIAS

pytestmark = pytest.mark.ssh


def ssh_clients(marker: str) -> list[psutil.Process]:
    return [
        p
        for p in psutil.process_iter(["name", "cmdline"])
        if p.info["name"] == "ssh" and any(marker in a for a in p.info["cmdline"] or [])
    ]


async def test_a_command_past_its_timeout_is_cut(sshd, tmp_path):
    src = SshRun(SshTarget(HOST_ALIAS, str(tmp_path)), ssh_options=sshd.ssh_options)
    marker = f"sleep 30 # {tmp_path.name}"
    try:
        t0 = time.monotonic()
        with pytest.raises(SshError) as err:
            await src.shell(marker, timeout=1.5)
        assert time.monotonic() - t0 < 15
        text = str(err.value)
        assert "no answer from the remote command in 1.5 s" in text and "\n" not in text
        assert f"try by hand: ssh -F {sshd.config} -- {HOST_ALIAS} 'ls -la " in text
        assert not ssh_clients(marker)  # the local client killed, not left waiting
        assert await src.shell("echo ok", timeout=10) == (0, b"ok\n", b"")
        assert await src.shell("sleep 1; echo late") == (0, b"late\n", b"")  # the default
    finally:
        await src.close()


def test_every_remote_command_has_a_finite_default_wait():
    import inspect

    for method in (SshRun._exec, SshRun.shell):
        default = inspect.signature(method).parameters["timeout"].default
        assert default == SshRun.EXEC_TIMEOUT_S and 0 < default < float("inf")
