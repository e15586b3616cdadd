"""A followed log that is not a regular file on the remote host (a FIFO, a link to /dev/zero),
over the real sshd on 127.0.0.1: refused in one line, as the local reader refuses it, and no
remote process is left waiting on the FIFO once the attach ends."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import psutil
import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.ssh import SshRun
from fontaine_tui.core.ssh.destination import SshTarget
from tests.logs import records, write_log
from tests.sshd_helper import HOST_ALIAS, attach_plain

pytestmark = pytest.mark.ssh
WORDS = {"fifo": "a FIFO (named pipe)", "dev-zero": "a device"}


def make_special(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


def left_behind(run: Path) -> list[str]:
    """Processes on this machine (the host's sshd is here) whose command line names the run
    folder: a remote script still waiting on it."""
    out = []
    for p in psutil.process_iter(["pid", "cmdline", "status"]):
        cmd = p.info["cmdline"] or []
        if p.info["status"] != psutil.STATUS_ZOMBIE and any(str(run) in a for a in cmd):
            out.append(f"{p.info['pid']} {' '.join(cmd)[:120]}")
    return out


def settled(run: Path, timeout: float = 5.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := left_behind(run)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_attach_refuses_a_remote_log_that_is_not_a_regular_file(sshd, tmp_path, kind):
    run = tmp_path / "run"
    write_log(run / "prereg-less.jsonl", records())  # the folder exists, with a file in it
    make_special(run / "train_log.jsonl", kind)
    res = attach_plain(sshd.config, run, tmp_path / "state", 60, FONTAINE_SSH_CONNECT_S="5")
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, res.stderr[-800:]
    assert lines[0] == "fontaine-tui: error: " + (
        f"{HOST_ALIAS}:{run}/train_log.jsonl: not a regular file ({WORDS[kind]}); "
        "refused: reading it could wait or run forever"
    )
    assert settled(run) == []


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
async def test_the_console_s_engine_output_is_refused_likewise(sshd, tmp_path, kind):
    run = tmp_path / "run"
    run.mkdir()
    make_special(run / "engine.out.log", kind)
    src = SshRun(SshTarget(HOST_ALIAS, str(run)), ssh_options=sshd.ssh_options, backoff=(0.1, 1))
    try:
        with pytest.raises(InputError) as caught:

            async def first() -> None:
                async for _ in src.follow("engine.out.log"):
                    pass

            await asyncio.wait_for(first(), 20)
    finally:
        await src.close()
    assert str(caught.value) == (
        f"{HOST_ALIAS}:{run}/engine.out.log: not a regular file ({WORDS[kind]}); "
        "refused: reading it could wait or run forever"
    )
    assert await asyncio.to_thread(settled, run) == []
