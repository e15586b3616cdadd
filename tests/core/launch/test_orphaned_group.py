"""A [command] whose exit-noting parent is killed with SIGKILL runs on in its process group.

The command runs under core/exitnote.py, in a session of its own; it ignores the SIGTERM it
gets when that parent dies (PR_SET_PDEATHSIG). Killed with SIGKILL, the parent notes
nothing, and the command runs on: the run is not over. The console that started it, and one
that finds it again by pid, both see it running, and both stop its group (SIGINT first)
where each member is in the session the parent made and started after the attempt's start;
else nothing is signalled. A command whose exit the note records is over, whatever it left
in its group. Real processes throughout."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from fontaine_tui.core import exitnote
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.run import attempts
from fontaine_tui.core.run.launcher import EngineProcess
from fontaine_tui.core.runfolder import RunFolder

TRAINER = """import os, signal, subprocess, sys, time
from pathlib import Path
signal.signal(signal.SIGTERM, signal.SIG_IGN)
out = Path(sys.argv[1])
if len(sys.argv) > 2:  # leaves a process in its group, then exits at once
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (out / "trainer.pid").write_text(str(os.getpid()))
    sys.exit(0)
(out / "trainer.pid").write_text(str(os.getpid()))
while True:
    with open(out / "log.txt", "a") as f:
        f.write("step\\n")
    time.sleep(0.05)
"""


def _start(tmp_path: Path, *extra: str) -> tuple[EngineProcess, int]:
    """The command started as `launch` starts a [command], and its trainer's pid."""
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER)
    argv = exitnote.wrapped([sys.executable, str(script), str(folder.root), *extra], folder.root)
    engine = EngineProcess.start(argv, folder)
    engine.who = "command"
    mark = folder.root / "trainer.pid"
    deadline = time.monotonic() + 30
    while not mark.exists() or not mark.read_text():  # its SIGTERM is ignored from then on
        assert time.monotonic() < deadline, folder.engine_out.read_text()
        time.sleep(0.02)
    return engine, int(mark.read_text())


@pytest.fixture
def cleanup() -> Iterator[list[EngineProcess]]:
    """Commands started: their groups killed, whatever the test left running, and reaped."""
    started: list[EngineProcess] = []
    yield started
    for engine in started:
        try:
            os.killpg(engine.pid, signal.SIGKILL)  # the test's own session
        except ProcessLookupError:
            pass
        engine.wait(10)


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _orphan(tmp_path: Path, cleanup: list[EngineProcess]) -> tuple[EngineProcess, int]:
    """A command whose exit-noting parent was killed with SIGKILL, still running."""
    engine, trainer = _start(tmp_path)
    cleanup.append(engine)
    os.kill(engine.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while psutil.pid_exists(engine.pid) and _running(engine.pid):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.3)  # the PR_SET_PDEATHSIG SIGTERM has come, and was ignored
    assert _running(trainer)
    return engine, trainer


def test_the_console_that_started_it_sees_its_group_run_on_and_stops_it(
    tmp_path: Path, cleanup: list[EngineProcess]
) -> None:
    engine, trainer = _orphan(tmp_path, cleanup)
    for _ in range(5):
        assert engine.poll() is None, "the run was called over while its command runs"
        time.sleep(0.05)
    assert [m.pid for m in engine.orphans] == [trainer]
    assert engine.refusal() is None
    info = engine.stop(grace_int=10, grace_term=1)
    assert not _running(trainer)
    assert (info.status, info.signal, info.sent) == ("stopped", "SIGINT", "SIGINT")
    assert info.describe().startswith("command stopped by SIGINT at step")


def test_a_console_that_finds_it_again_by_pid_stops_its_group(
    tmp_path: Path, cleanup: list[EngineProcess]
) -> None:
    engine, trainer = _orphan(tmp_path, cleanup)
    again = EngineProcess.reattach(engine.folder, engine.pid, engine.started)
    again.who = "command"
    assert again.poll() is None and again.refusal() is None
    info = again.stop(grace_int=10, grace_term=1)
    assert not _running(trainer)
    assert (info.status, info.signal) == ("stopped", "SIGINT")
    assert again.poll() is info


def test_a_group_not_tied_to_the_recorded_start_is_never_signalled(
    tmp_path: Path, cleanup: list[EngineProcess]
) -> None:
    """The attempt's start said 30 s later than the group's members started: they are not
    the ones it made, and nothing is sent."""
    engine, trainer = _orphan(tmp_path, cleanup)
    assert engine.started is not None
    later = EngineProcess.reattach(engine.folder, engine.pid, engine.started + 30)
    later.who = "command"
    assert later.poll() is None  # its group lives on
    why = later.refusal()
    assert why is not None and f"pid {trainer} started " in why, why
    assert "before the run's attempt; not signalled" in why
    assert later.signal_group(signal.SIGINT) is False
    with pytest.raises(InputError, match="before the run's attempt"):
        later.stop(grace_int=1, grace_term=1)
    time.sleep(0.2)
    assert _running(trainer) and later.sent is None


def test_a_command_whose_exit_is_noted_is_over_whatever_its_group_holds(
    tmp_path: Path, cleanup: list[EngineProcess]
) -> None:
    engine, _ = _start(tmp_path, "leave-one")
    cleanup.append(engine)
    info = engine.wait(20)
    assert info is not None and (info.status, info.code) == ("finished", 0)
    found = EngineProcess.reattach(engine.folder, engine.pid, engine.started)
    found.who = "command"
    assert found.poll() is not None and found.orphans == ()


def test_its_attempt_reads_as_running_while_the_group_lives_on(
    tmp_path: Path, cleanup: list[EngineProcess]
) -> None:
    """attempts.jsonl's reader (the console's attempts, `inspect`) says so too."""
    engine, trainer = _orphan(tmp_path, cleanup)
    attempts.begin(engine.folder, "launch", engine)
    [attempt] = attempts.read_attempts(engine.folder)
    assert attempt.cause == "running", attempt
    assert attempt.detail == (
        f"pid {engine.pid} is gone, but its process group lives on (pid {trainer})"
    )
    engine.stop(grace_int=10, grace_term=1)
    [attempt] = attempts.read_attempts(engine.folder)
    assert (attempt.cause, attempt.detail) == (
        "unknown",
        f"no end recorded: pid {engine.pid} is gone (no console saw its exit)",
    )


def test_an_engine_that_exits_first_keeps_its_own_exit_once_its_group_ends(
    tmp_path: Path, cleanup: list[EngineProcess]
) -> None:
    """The engine is the trainer itself: what it left in its group runs, and once that
    ends too the run's exit is the engine's own code, not an unknown one."""
    folder = RunFolder(tmp_path)
    leave = (
        "import subprocess, sys; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print(p.pid, flush=True); sys.exit(3)"
    )
    engine = EngineProcess.start([sys.executable, "-c", leave], folder)
    cleanup.append(engine)
    deadline = time.monotonic() + 20
    while not folder.engine_out.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    left = int(folder.engine_out.read_text())
    while _running(engine.pid):  # the engine exited (a zombie until polled)
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert engine.poll() is None and [m.pid for m in engine.orphans] == [left]
    os.kill(left, signal.SIGKILL)
    info = engine.wait(10)
    assert info is not None and (info.code, info.status) == (3, "failed"), info
