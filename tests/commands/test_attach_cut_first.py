"""`attach HOST:PATH` to a host that cuts the connection during the first remote command.

The host's sshd (a real one on 127.0.0.1) kills the process serving the connection in the
first session ("Connection to HOST closed by remote host", ssh exit 255), as a host dropping
the link would: the attach tries it again like any other first-connect failure and follows
the run to its end, never "ssh failed; try by hand"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.core.follow.test_ssh_first_cut import cutting_sshd
from tests.logs import records, write_log
from tests.sshd_helper import attach_plain

pytestmark = pytest.mark.ssh


def test_attach_tries_again_a_connection_cut_in_its_first_command(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_log(run / "train_log.jsonl", records())
    server, cut = cutting_sshd(tmp_path / "host")
    cut.touch()
    try:
        res = attach_plain(server.config, run, tmp_path / "state", FONTAINE_SSH_CONNECT_S=None)
    finally:
        server.stop()
    assert not cut.exists()  # the first session was cut
    assert res.returncode != 2 and "try by hand" not in res.stderr, res.stderr
    assert "verdict:" in res.stdout and "event end at step 1000" in res.stdout, res.stdout
