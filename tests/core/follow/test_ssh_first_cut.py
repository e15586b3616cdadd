"""A connection cut during the first remote command is tried again like a first connect.

A real sshd on 127.0.0.1 whose sessions run through a wrapper (ForceCommand): while a `cut`
file exists, the next session removes it and kills the sshd process serving its connection,
as a host that drops the link ("Connection to HOST closed by remote host", ssh exit 255). The
first command over a connection is then tried again with the first connect's back-off and
bound (FONTAINE_SSH_CONNECT_S); once a command has been answered, a cut is said at once, as
before (the follower reconnects on its own)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fontaine_tui.core.follow.ssh import SshRun
from fontaine_tui.core.ssh.connection import SshError
from fontaine_tui.core.ssh.destination import SshTarget
from tests.sshd_helper import HOST_ALIAS, Sshd, find_sshd

pytestmark = pytest.mark.ssh


def cutting_sshd(root: Path) -> tuple[Sshd, Path]:
    """A started sshd that cuts a session's connection while `cut` exists, and that file."""
    if find_sshd() is None:
        pytest.skip("sshd not found (install openssh-server)")
    root.mkdir(parents=True, exist_ok=True)
    cut = root / "cut"
    wrapper = root / "cut-session"
    wrapper.write_text(
        "#!/bin/sh\n"
        "# the session that takes the cut file kills the sshd process serving its connection\n"
        f"if rm {cut} 2>/dev/null; then kill -9 $PPID; sleep 5; exit 1; fi\n"
        'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n'
    )
    wrapper.chmod(0o755)
    return Sshd(root / "sshd", extra_config=f"ForceCommand {wrapper}").start(), cut


async def test_the_first_command_cut_is_tried_again_a_later_one_is_said(tmp_path, monkeypatch):
    monkeypatch.delenv("FONTAINE_SSH_CONNECT_S", raising=False)
    server, cut = cutting_sshd(tmp_path / "host")
    run = tmp_path / "run"
    run.mkdir()
    (run / "prereg.json").write_text("{}")
    src = SshRun(
        SshTarget(HOST_ALIAS, str(run)), ssh_options=server.ssh_options, backoff=(0.25, 1.0)
    )
    try:
        cut.touch()
        assert await src.read_bytes("prereg.json") == b"{}"  # cut, then tried again
        assert not cut.exists() and src.connect_tries >= 1
        cut.touch()  # a command answered before: the cut is said, not hidden by retries
        with pytest.raises(SshError, match=r"fontaine-test: .*try by hand: ssh -F"):
            await src.read_bytes("prereg.json")
    finally:
        await src.close()
        server.stop()


async def test_the_bound_holds_for_a_cut_first_command(tmp_path, monkeypatch):
    monkeypatch.setenv("FONTAINE_SSH_CONNECT_S", "0")  # no retries: said at once
    server, cut = cutting_sshd(tmp_path / "host")
    src = SshRun(SshTarget(HOST_ALIAS, str(tmp_path)), ssh_options=server.ssh_options)
    try:
        cut.touch()
        with pytest.raises(SshError, match="try by hand"):
            await src.read_bytes("prereg.json")
    finally:
        await src.close()
        server.stop()
