"""RemoteEngine's liveness and its read of a run seen gone, against the real sshd on 127.0.0.1
(conftest's, logged in as this user): the Slurm client commands there are small scripts on
the host's PATH ([hosts.X] env), so squeue can fail, answer empty, or answer; the engine is a
real process in its own session. A failing squeue is "cannot say", never "gone"; a run seen
gone is read there, never stopped."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.launch import remote
from fontaine_tui.core.launch.remote import RemoteEngine
from fontaine_tui.core.run.launcher import EngineProcess
from fontaine_tui.core.runs.hosts import HostSettings
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.slurm import client as slurm_client
from fontaine_tui.core.slurm import job as slurm_job
from fontaine_tui.core.ssh.connection import SshConnection, SshError
from tests.logs import T0, meta, train, write_log
from tests.sshd_helper import HOST_ALIAS

ROOT = Path(__file__).resolve().parents[3]
DOWN = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
INVALID = "slurm_load_jobs error: Invalid job id specified"


def tool(rc: int, out: str = "", err: str = "") -> str:
    """A Slurm client command's body: every call logged, then the given answer."""
    return (
        'echo "$0 $*" >> "$CALLS"\n'
        + (f"printf '%s\\n' '{out}'\n" if out else "")
        + (f"echo '{err}' >&2\n" if err else "")
        + f"exit {rc}\n"
    )


def fake_slurm(folder: Path, **tools: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("squeue", "sacct", "scontrol", "scancel"):
        path = folder / name
        path.write_text("#!/bin/sh\n" + tools.get(name, tool(0)))
        path.chmod(0o755)
    return folder


def settings_for(tmp_path: Path, bin_dir: Path | None = None) -> HostSettings:
    env = {
        "FONTAINE_REGISTRY": str(tmp_path / "there" / "babysit.toml"),
        "CALLS": str(tmp_path / "calls"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PATH": f"{bin_dir}:/usr/bin:/bin" if bin_dir else "/usr/bin:/bin",
    }
    return HostSettings(HOST_ALIAS, str(ROOT), sys.executable, env)


def calls(tmp_path: Path) -> list[str]:
    path = tmp_path / "calls"
    return (
        [
            Path(ln.split()[0]).name + " " + " ".join(ln.split()[1:])
            for ln in path.read_text().splitlines()
        ]
        if path.exists()
        else []
    )


@pytest.fixture
def engine_process():
    """`sleep` in its own session, as a launched engine is: its pid leads its group."""
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True, stdin=subprocess.DEVNULL)
    yield proc
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


# -- liveness ------------------------------------------------------------------------------


@pytest.mark.ssh
@pytest.mark.parametrize(
    "answers, expected",
    [
        # slurmctld unreachable: squeue, sacct and scontrol all fail: cannot say
        (
            {
                "squeue": tool(1, err=DOWN),
                "sacct": tool(1, err="Slurm accounting storage is disabled"),
                "scontrol": tool(1, err=DOWN),
            },
            None,
        ),
        # squeue times out (killed by its own timeout), the rest not there to ask
        ({"squeue": tool(124), "sacct": tool(127), "scontrol": tool(124)}, None),
        # squeue answers empty; accounting says it runs (a controller that lost it for a moment)
        ({"squeue": tool(0), "sacct": tool(0, out="RUNNING|0:0")}, True),
        # squeue answers empty; scontrol holds the job, still COMPLETING
        (
            {
                "squeue": tool(0),
                "sacct": tool(1, err="Slurm accounting storage is disabled"),
                "scontrol": tool(
                    0, out="JobId=123 JobName=x JobState=COMPLETING Reason=None ExitCode=0:0"
                ),
            },
            True,
        ),
        # squeue answers empty, and scontrol cannot reach the controller: cannot say
        (
            {
                "squeue": tool(0),
                "sacct": tool(1, err="Slurm accounting storage is disabled"),
                "scontrol": tool(1, err=DOWN),
            },
            None,
        ),
        # ended, as scontrol keeps it for MinJobAge
        (
            {
                "squeue": tool(0),
                "sacct": tool(1, err="Slurm accounting storage is disabled"),
                "scontrol": tool(
                    0, out="JobId=123 JobName=x JobState=COMPLETED Reason=None ExitCode=0:0"
                ),
            },
            False,
        ),
        # forgotten: squeue and scontrol both answer that the controller holds no such job
        (
            {
                "squeue": tool(1, err=INVALID),
                "sacct": tool(1, err="Slurm accounting storage is disabled"),
                "scontrol": tool(1, err=INVALID),
            },
            False,
        ),
        # running, as squeue says
        ({"squeue": tool(0, out="RUNNING|None")}, True),
    ],
)
def test_a_job_is_gone_only_when_the_scheduler_says_so(sshd, tmp_path, answers, expected):
    bin_dir = fake_slurm(tmp_path / "bin", **answers)
    engine = RemoteEngine(
        settings_for(tmp_path, bin_dir), str(tmp_path), 0, sshd.ssh_options, poll_s=3600, job="123"
    )
    try:
        assert engine.alive() is expected
    finally:
        engine.close()


@pytest.mark.ssh
def test_a_failing_squeue_neither_ends_nor_stops_the_run(sshd, tmp_path):
    """The console's thread looks again and again while the scheduler cannot say: no exit,
    no `fontaine-tui stop` there, no scancel."""
    bin_dir = fake_slurm(
        tmp_path / "bin",
        squeue=tool(1, err=DOWN),
        sacct=tool(1, err=DOWN),
        scontrol=tool(1, err=DOWN),
        scancel=tool(0),
    )
    folder = tmp_path / "run"
    folder.mkdir()
    settings = settings_for(tmp_path, bin_dir)
    Registry(settings.env["FONTAINE_REGISTRY"]).upsert(
        Entry("r", str(folder), hostname(), job="123", status="running")
    )
    engine = RemoteEngine(settings, str(folder), 0, sshd.ssh_options, poll_s=0.1, job="123")
    try:
        deadline = time.monotonic() + 60
        while calls(tmp_path).count("squeue -h -j 123 -o %T|%r") < 3:
            assert time.monotonic() < deadline, calls(tmp_path)
            time.sleep(0.1)
        assert engine.poll() is None
    finally:
        engine.close()
    assert not [c for c in calls(tmp_path) if c.startswith("scancel")]
    assert [c.split()[0] for c in calls(tmp_path)][:3] == ["squeue", "sacct", "scontrol"]


@pytest.mark.ssh
def test_the_pid_is_gone_only_when_test_says_so(sshd, tmp_path, engine_process):
    settings = settings_for(tmp_path)
    engine = RemoteEngine(
        settings, str(tmp_path), engine_process.pid, sshd.ssh_options, poll_s=3600
    )
    try:
        assert engine.alive() is True
        os.killpg(engine_process.pid, signal.SIGKILL)
        engine_process.wait()
        assert engine.alive() is False
    finally:
        engine.close()
    cut = RemoteEngine(settings, str(tmp_path), 1, ("-F", str(tmp_path / "no-such-config")))
    try:
        assert cut.alive() is None  # ssh fails (255): cannot say
    finally:
        cut.close()


# -- a run seen gone: read, never stopped -----------------------------------------------------


def exit_seen(engine: RemoteEngine, timeout: float = 60.0):
    """The exit the engine's watcher thread reads there, waited for."""
    deadline = time.monotonic() + timeout
    while (info := engine.poll()) is None:
        assert time.monotonic() < deadline, "no exit seen"
        time.sleep(0.1)
    return info


def registered_running(tmp_path: Path, folder: Path, pid: int):
    """The host's settings, its registry holding `folder` as running with `pid`, and every
    byte of the registry and the folder as they are now (to show nothing was written)."""
    settings = settings_for(tmp_path)
    registry = Registry(settings.env["FONTAINE_REGISTRY"])
    registry.upsert(Entry("r", str(folder), hostname(), pid=pid, status="running"))
    return settings, registry, {p: p.read_bytes() for p in [registry.path, *folder.iterdir()]}


@pytest.mark.ssh
def test_asking_how_a_live_run_ended_stops_nothing(sshd, tmp_path, engine_process):
    """Even when asked about a run that still runs (a liveness answer gone wrong), the read
    there signals nothing and writes nothing: the engine goes on, its registry entry and
    folder as they were."""
    folder = tmp_path / "run"
    write_log(folder / "train_log.jsonl", [meta(), train(1, T0 + 1), train(2, T0 + 2)])
    settings, registry, before = registered_running(tmp_path, folder, engine_process.pid)
    engine = RemoteEngine(settings, str(folder), engine_process.pid, sshd.ssh_options, poll_s=3600)
    try:
        assert engine._ask_exit() is None  # it runs: no exit to tell
    finally:
        engine.close()
    time.sleep(0.5)
    assert engine_process.poll() is None  # no SIGINT reached it
    assert {p: p.read_bytes() for p in [registry.path, *folder.iterdir()]} == before
    assert sorted(folder.iterdir()) == sorted(p for p in before if p.parent == folder)


@pytest.mark.ssh
def test_a_run_seen_gone_is_read_there(sshd, tmp_path, engine_process):
    """The engine gone: the console's thread sees it, reads the end from the run folder
    there, and nothing there is written (the registry and attempts.jsonl as they were)."""
    from fontaine_tui.core.run import attempts
    from fontaine_tui.core.runfolder import RunFolder

    folder = tmp_path / "run"
    folder.mkdir()
    attempts.begin(
        RunFolder(folder),
        "launch",
        EngineProcess.reattach(RunFolder(folder), engine_process.pid),
        hostname(),
    )
    write_log(
        folder / "train_log.jsonl",
        [
            meta(),
            train(1, T0 + 1),
            train(2, T0 + 2),
            {"kind": "event", "step": 2, "time": T0 + 3, "event": "end", "detail": "finished"},
        ],
    )
    settings, registry, before = registered_running(tmp_path, folder, engine_process.pid)
    engine = RemoteEngine(settings, str(folder), engine_process.pid, sshd.ssh_options, poll_s=0.1)
    try:
        time.sleep(0.5)
        assert engine.poll() is None
        os.killpg(engine_process.pid, signal.SIGKILL)
        engine_process.wait()
        info = exit_seen(engine)
    finally:
        engine.close()
    assert (info.last_step, info.event, info.status) == (2, "end", "finished"), info
    assert {p: p.read_bytes() for p in [registry.path, *folder.iterdir()]} == before


@pytest.mark.ssh
def test_a_forgotten_job_is_read_from_its_folder(sshd, tmp_path):
    bin_dir = fake_slurm(
        tmp_path / "bin",
        squeue=tool(1, err=INVALID),
        sacct=tool(1, err="Slurm accounting storage is disabled"),
        scontrol=tool(1, err=INVALID),
        scancel=tool(0),
    )
    folder = tmp_path / "run"
    write_log(folder / "train_log.jsonl", [meta(), train(1, T0 + 1), train(7, T0 + 2)])
    engine = RemoteEngine(
        settings_for(tmp_path, bin_dir), str(folder), 0, sshd.ssh_options, poll_s=0.1, job="123"
    )
    try:
        info = exit_seen(engine)
    finally:
        engine.close()
    assert info.last_step == 7 and info.code is None, info
    assert not [c for c in calls(tmp_path) if c.startswith("scancel")]


def test_read_exit_of_a_job_that_runs_or_cannot_be_asked(tmp_path, monkeypatch):
    folder = tmp_path / "run"
    folder.mkdir()
    answers = {
        "RUNNING": (slurm_client.JobState("RUNNING", source="squeue"), False),
        "?": (None, False),
    }
    for key, answer in answers.items():
        monkeypatch.setattr(slurm_client, "look_up", lambda job, a=answer: a)
        assert remote.read_exit(str(folder), 0, "9") == (
            (True, None) if key == "RUNNING" else (None, None)
        )
    with pytest.raises(InputError, match="no such run folder"):
        remote.read_exit(str(tmp_path / "missing"), 0, "9")


# -- the local waits cover the remote ones ---------------------------------------------------


def test_the_stop_wait_covers_the_remote_stop_sequence():
    """A remote Slurm stop is SIGINT 60 s, SIGTERM 30 s, scancel 120 s, each around scheduler
    calls within their timeouts, plus the connection; the pid sequence is shorter."""
    graces = slurm_job.GRACE_INT_S + slurm_job.GRACE_TERM_S + slurm_job.GRACE_CANCEL_S
    assert graces == 210.0
    defaults = inspect.signature(slurm_job.SlurmJob.stop).parameters
    assert [defaults[k].default for k in ("grace_int", "grace_term", "grace_cancel")] == [
        slurm_job.GRACE_INT_S,
        slurm_job.GRACE_TERM_S,
        slurm_job.GRACE_CANCEL_S,
    ]
    assert (
        slurm_job.stop_bound()
        >= graces + 4 * slurm_client.LOOK_S + 3 * slurm_client.QUERY_TIMEOUT_S
    )
    assert remote.STOP_TIMEOUT_S > slurm_job.stop_bound()
    pid = inspect.signature(EngineProcess.stop).parameters
    assert remote.STOP_TIMEOUT_S > pid["grace_int"].default + pid["grace_term"].default + 10


def test_the_launch_there_gets_a_long_wait_and_a_cut_one_says_so(tmp_path, monkeypatch):
    """`presets show` a short wait, the remote launch a long one; a launch cut by its wait
    says that it may have gone on there."""
    from fontaine_tui.core.preset.find import load_preset

    preset = load_preset("smoke")
    seen: list[tuple[str, float | None]] = []

    async def shell(self, command, timeout=SshConnection.EXEC_TIMEOUT_S):
        seen.append((command.split(" -m fontaine_tui ")[-1].split()[0], timeout))
        if " presets show " in command:
            return 0, f"# sha256 (canonical form): {preset.sha256}\n".encode(), b""
        raise SshError(f"{HOST_ALIAS}: no answer from the remote command in {timeout:g} s")

    async def close(self):
        pass

    monkeypatch.setattr(SshConnection, "shell", shell)
    monkeypatch.setattr(SshConnection, "close", close)
    with pytest.raises(InputError) as err:
        asyncio.run(remote.launch_on(HostSettings(HOST_ALIAS), preset, tmp_path))
    assert seen == [("presets", remote.CALL_TIMEOUT_S), ("launch", remote.LAUNCH_TIMEOUT_S)]
    assert remote.LAUNCH_TIMEOUT_S > SshConnection.EXEC_TIMEOUT_S
    assert "may have gone on: see `fontaine-tui runs` on" in str(err.value)
    assert "\n" not in str(err.value)


def test_report_exit_prints_one_json_line(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "run"
    write_log(folder / "train_log.jsonl", [meta(), train(3, T0 + 1)])
    assert remote.report_exit(str(folder), "999999999", "") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["alive"] is False and doc["exit"]["last_step"] == 3
    assert remote.report_exit(str(tmp_path / "missing"), "1") == 2
    assert "no such run folder" in capsys.readouterr().err
