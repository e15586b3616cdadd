"""Remote telemetry through the real SSH source against a real sshd on 127.0.0.1."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from fontaine_tui.core.follow.ssh import SshRun
from fontaine_tui.core.host.memory import parse_meminfo
from fontaine_tui.core.host.telemetry import sample_remote
from fontaine_tui.core.ssh.destination import SshTarget
from tests.sshd_helper import HOST_ALIAS, Sshd, find_sshd

pytestmark = pytest.mark.ssh


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory):
    if find_sshd() is None:
        pytest.skip("sshd not found (install openssh-server)")
    server = Sshd(tmp_path_factory.mktemp("sshd-launch")).start()
    yield server
    server.stop()


def test_remote_snapshot_over_ssh(sshd: Sshd, tmp_path: Path) -> None:
    run = SshRun(SshTarget(HOST_ALIAS, str(tmp_path)), sshd.ssh_options)

    async def go():
        try:
            return await sample_remote(run.run_command, host=HOST_ALIAS)
        finally:
            await run.close()

    t = asyncio.run(asyncio.wait_for(go(), 60))
    local_total, _ = parse_meminfo(Path("/proc/meminfo").read_text())
    assert t.ram is not None and t.ram.total == local_total  # same machine, read remotely
    assert t.ram.source == "remote meminfo" and 0 < t.ram.available <= t.ram.total
    if shutil.which("nvidia-smi") is None:
        assert t.gpus is None and t.gpu_reason.startswith("nvidia-smi: ")
        assert "exited" in t.gpu_reason and "--query-gpu" not in t.gpu_reason  # the cause shows
    assert t.host == HOST_ALIAS and t.process is None


def test_the_history_is_read_from_the_far_run_folder(sshd: Sshd, tmp_path: Path) -> None:
    """attach HOST:PATH draws the sidecars there: each node's, a torn line counted."""
    from fontaine_tui.core.host.recorder import Sidecar
    from fontaine_tui.model.history import HistoryReader

    for name, node in (("telemetry.node0.jsonl", "n0"), ("telemetry.node1.jsonl", "n1")):
        sidecar = Sidecar(tmp_path / name)
        for i in range(3):
            sidecar.append({"v": 1, "t": 100.0 + i, "node": node, "step": i, "gpus": None})
    with open(tmp_path / "telemetry.node1.jsonl", "ab") as fh:
        fh.write(b'{"v": 1, "t": 1')  # the recorder caught writing
    run = SshRun(SshTarget(HOST_ALIAS, str(tmp_path)), sshd.ssh_options)

    async def go():
        try:
            return await HistoryReader(run).read()
        finally:
            await run.close()

    history, note = asyncio.run(asyncio.wait_for(go(), 60))
    assert {node: len(s) for node, s in history.nodes.items()} == {"n0": 3, "n1": 3}
    assert note == "telemetry history: a torn last line: not read"
