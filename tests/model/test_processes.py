"""Whose processes the processes mode shows, and which of them a signal may reach."""

from __future__ import annotations

import signal
import sys
import time

import pytest

from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.host.proctree import TreeLook
from fontaine_tui.core.run.launcher import EngineProcess, process_started
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.model.processes import look, row, scope_of, shown_argv, signal_member, title
from fontaine_tui.model.session import Session

NO_GPU = (None, "NVML: library not found")
# a shell between us and the sleeper: the sleeper is not this process's child
GRANDCHILD = ["sh", "-c", "sleep 60 & echo $! > pid.txt; wait"]


@pytest.fixture
def engine(tmp_path):
    engine = EngineProcess.start(
        [sys.executable, "-c", "import time; time.sleep(60)"], RunFolder(tmp_path)
    )
    yield engine
    engine.signal_group(signal.SIGKILL)
    engine.wait(10)


def _session(tmp_path, preset, kind, process):
    return Session(LocalRun(tmp_path), preset, kind, process)


def test_a_launched_child_is_ours(tmp_path, preset, engine):
    scope = scope_of(_session(tmp_path, preset, "launch", engine))
    assert (scope.root, scope.ours, scope.note) == (engine.pid, True, "launched by this console")
    tree = TreeLook().look(engine.pid, gpus=NO_GPU)
    assert title(scope, tree).startswith(f"engine pid {engine.pid}: 1 process(es)")
    assert "k signal" in title(scope, tree)


def test_an_attached_run_is_read_only(tmp_path, preset, engine):
    scope = scope_of(_session(tmp_path, preset, "attach", engine))
    assert scope.root == engine.pid and not scope.ours
    tree = look(scope, TreeLook())
    assert tree is not None and tree.members[0].pid == engine.pid  # shown, read-only
    out = signal_member(scope, tree.members[0], "SIGTERM")
    assert out.severity == "warning" and out.message.startswith("not sent: read-only")
    time.sleep(0.2)
    assert engine.poll() is None


def test_a_launch_whose_process_is_not_our_child_is_not_ours(tmp_path, preset):
    import subprocess

    shell = subprocess.Popen(GRANDCHILD, cwd=tmp_path, start_new_session=True)
    try:
        pid_file = tmp_path / "pid.txt"
        while not pid_file.exists() or not pid_file.read_text().strip():
            time.sleep(0.05)
        pid = int(pid_file.read_text())
        found = EngineProcess.reattach(RunFolder(tmp_path), pid, process_started(pid))
        scope = scope_of(_session(tmp_path, preset, "launch", found))
        assert scope.root == pid and not scope.ours
    finally:
        shell.kill()
        shell.wait(10)


def test_replay_and_folder_attach_have_no_tree(tmp_path, preset):
    assert scope_of(_session(tmp_path, preset, "replay", None)).note == (
        "replay: a finished run has no processes"
    )
    scope = scope_of(_session(tmp_path, preset, "attach", None))
    assert scope.root is None and look(scope, TreeLook()) is None
    assert title(scope, None) == "attached by its folder: no process of this run is known here"


def test_signal_member_refuses_a_stale_member(tmp_path, preset, engine):
    scope = scope_of(_session(tmp_path, preset, "launch", engine))
    (member,) = TreeLook().look(engine.pid, gpus=NO_GPU).members
    from dataclasses import replace

    out = signal_member(scope, replace(member, started=member.started - 3), "SIGKILL")
    assert out.severity == "error" and "another process now" in out.message
    assert signal_member(scope, member, "SIGHUP").message == "not a signal offered here: SIGHUP"
    time.sleep(0.2)
    assert engine.poll() is None
    assert signal_member(scope, member, "SIGKILL").message == (
        f"SIGKILL sent to pid {engine.pid} (engine)"
    )
    assert engine.wait(10) is not None


def test_a_stale_row_records_no_stop_and_a_stop_records_one(tmp_path, preset, engine):
    """A stop from k is on record for [recovery] only when the signal went to the process."""
    from dataclasses import replace

    from fontaine_tui.core.run import attempts

    folder = RunFolder(tmp_path)
    number = attempts.begin(folder, "launch", engine, "here")
    scope = scope_of(_session(tmp_path, preset, "launch", engine))
    (member,) = TreeLook().look(engine.pid, gpus=NO_GPU).members
    out = signal_member(scope, replace(member, started=member.started - 3), "SIGTERM")
    assert out.severity == "error" and not attempts.stop_asked(folder, number)
    assert engine.sent is None
    assert signal_member(scope, member, "SIGTERM").severity == "information"
    assert attempts.stop_asked(folder, number) and engine.sent == "SIGTERM"
    assert engine.wait(10) is not None


def test_row_cells_and_masked_argv(tmp_path, preset, engine):
    (member,) = TreeLook().look(engine.pid, gpus=NO_GPU).members
    cells = row(member, gpu_known=False)
    assert cells[:3] == (str(engine.pid), "engine (python)", member.state)
    assert cells[3] == "…" and cells[4].endswith("MiB") and cells[6] == ""
    assert shown_argv(("train.py", "--api-key", "s3cr3t", "HF_TOKEN=hf_x", "--lr=3e-4")) == (
        "train.py --api-key *** HF_TOKEN=*** --lr=3e-4"
    )
    assert (
        shown_argv(("push", "https://user:pw@example.com/x"))
        == "push https://user:***@example.com/x"
    )
    assert shown_argv(("/opt/venv/bin/python", "train.py")) == "python train.py"


def test_a_run_elsewhere_says_where_its_processes_are(tmp_path, preset):
    from fontaine_tui.core.launch.remote import RemoteEngine
    from fontaine_tui.core.runs.hosts import HostSettings
    from fontaine_tui.core.slurm.job import SlurmJob

    far = RemoteEngine(HostSettings("gpu-box"), "/runs/a", 4242, watch=False)
    scope = scope_of(_session(tmp_path, preset, "attach", far))
    assert scope.root is None and not scope.ours
    assert scope.note == (
        "launched on gpu-box: its processes are there "
        "(ssh gpu-box ps -o pid,stat,pcpu,rss,nlwp,args --forest -s 4242)"
    )
    job = SlurmJob(RunFolder(tmp_path), "777", watch=False)
    scope = scope_of(_session(tmp_path, preset, "launch", job))
    assert scope.root is None and scope.note.startswith("Slurm job 777: its processes are on")


def test_a_launched_command_is_named_as_one(tmp_path, preset, engine):
    engine.who = "command"  # a preset's own [command] trainer, as makers.py starts it
    scope = scope_of(_session(tmp_path, preset, "launch", engine))
    assert scope.ours and scope.who == "command"
    tree = look(scope, TreeLook())
    assert tree is not None and tree.members[0].role == "command"
    assert title(scope, tree).startswith(f"command pid {engine.pid}: 1 process(es)")
