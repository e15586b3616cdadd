"""`attach HOST:PATH` to a host whose sshd starts listening only after the attach began: the
first connection is tried again (the reconnect back-off, FONTAINE_SSH_CONNECT_S in all), and
the run is followed, never "ssh failed; try by hand"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.logs import records, write_log
from tests.sshd_helper import Sshd, attach_plain, find_sshd

pytestmark = pytest.mark.ssh


def test_attach_waits_for_a_host_that_listens_late(tmp_path: Path) -> None:
    if find_sshd() is None:
        pytest.skip("sshd not found (install openssh-server)")
    run = tmp_path / "run"
    write_log(run / "train_log.jsonl", records())
    late = Sshd(tmp_path / "late").start(listen_after=3.0)
    try:
        res = attach_plain(late.config, run, tmp_path / "state", FONTAINE_SSH_CONNECT_S=None)
    finally:
        late.stop()
    assert res.returncode != 2 and "try by hand" not in res.stderr, res.stderr
    assert "verdict:" in res.stdout and "event end at step 1000" in res.stdout, res.stdout
