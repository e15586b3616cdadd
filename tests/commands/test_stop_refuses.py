"""`fontaine-tui stop` never signals a process it cannot prove is the engine: a registered
pid without a recorded start time (missing, or 0.0) may belong to anyone by now."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


def stop_victim(
    registry_path: Path, folder: Path, pid: int, started_line: str
) -> subprocess.CompletedProcess:
    """Register `pid` as the run "victim" (with `started_line` for its start time) and run
    `fontaine-tui stop victim --yes`."""
    registry_path.parent.mkdir(parents=True, exist_ok=True)
    registry_path.write_text(
        f'[[runs]]\nname = "victim"\nrun_dir = "{folder}"\nhost = "{socket.gethostname()}"\n'
        f'pid = {pid}\n{started_line}status = "running"\n'
    )
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "stop", "victim", "--yes"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def stranger() -> subprocess.Popen:
    """An unrelated process leading its own session, as a reused pid would be."""
    proc = subprocess.Popen(["setsid", "sleep", "60"])
    time.sleep(0.2)
    assert proc.poll() is None
    return proc


@pytest.mark.parametrize(
    "started_line", ["", "pid_started = 0.0\n"], ids=["pid_started missing", "pid_started 0.0"]
)
def test_stop_never_signals_a_pid_without_a_recorded_start(
    tmp_path: Path, registry_path: Path, started_line: str
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    sleeper = stranger()
    try:
        res = stop_victim(registry_path, folder, sleeper.pid, started_line)
        assert res.returncode == 2, (res.stdout, res.stderr)
        assert res.stderr.count("\n") == 1 and "start time" in res.stderr, res.stderr
        assert "Traceback" not in res.stderr and "finished" not in res.stdout
        time.sleep(0.3)
        assert sleeper.poll() is None  # still alive: never signalled
        assert f"pid = {sleeper.pid}" in registry_path.read_text()
        assert 'status = "running"' in registry_path.read_text()  # nothing recorded
    finally:
        sleeper.kill()
        sleeper.wait()


def test_stop_of_a_pid_whose_start_time_differs_signals_nobody(
    tmp_path: Path, registry_path: Path
) -> None:
    """A recorded start time that does not match: the engine is gone, the process is not ours."""
    import psutil

    folder = tmp_path / "run"
    folder.mkdir()
    sleeper = stranger()
    try:
        started = psutil.Process(sleeper.pid).create_time() - 3600
        res = stop_victim(registry_path, folder, sleeper.pid, f"pid_started = {started}\n")
        assert res.returncode == 0, res.stderr
        time.sleep(0.3)
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize(
    "started_line",
    ["pid_started = 0.0\n", "pid_started = 1e9\n"],
    ids=["registry 0.0", "registry another start"],
)
def test_the_run_folders_attempts_never_vouch_for_a_pid_alone(
    tmp_path: Path, registry_path: Path, started_line: str
) -> None:
    """attempts.jsonl lives in the run folder, which anyone who can write there may edit: its
    start time for the registered pid counts only where the registry's agrees."""
    import json

    import psutil

    folder = tmp_path / "run"
    folder.mkdir()
    sleeper = stranger()
    try:
        started = psutil.Process(sleeper.pid).create_time()
        (folder / "attempts.jsonl").write_text(
            json.dumps(
                {
                    "event": "begin",
                    "attempt": 1,
                    "kind": "launch",
                    "pid": sleeper.pid,
                    "pid_started": started,
                    "host": socket.gethostname(),
                    "at": "x",
                    "log_offset": 0,
                    "out_offset": 0,
                }
            )
            + "\n"
        )
        res = stop_victim(registry_path, folder, sleeper.pid, started_line)
        assert "Traceback" not in res.stderr and "stopping" not in res.stderr, res.stderr
        time.sleep(0.3)
        assert sleeper.poll() is None  # still alive: never signalled
    finally:
        sleeper.kill()
        sleeper.wait()


def begin_line(pid: int, started: float, attempt: int = 1) -> str:
    """An attempt's begin line as the launch writes it (core/run/attempts.py)."""
    import json

    return (
        json.dumps(
            {
                "event": "begin",
                "attempt": attempt,
                "kind": "launch",
                "pid": pid,
                "pid_started": started,
                "host": socket.gethostname(),
                "at": "2026-01-01T00:00:00Z",
                "log_offset": 0,
                "out_offset": 0,
            }
        )
        + "\n"
    )


@pytest.mark.parametrize("attempts", ["none", "another pid"])
def test_a_registered_pid_the_run_never_started_is_never_signalled(
    tmp_path: Path, registry_path: Path, attempts: str
) -> None:
    """The registry names a live process with its true start time, but no attempt of the run
    (attempts.jsonl, written by its launch) records that pid: refused in one line, exit 2."""
    import psutil

    folder = tmp_path / "run"
    folder.mkdir()
    sleeper, engine = stranger(), subprocess.Popen([sys.executable, "-c", "pass"])
    engine.wait()  # the run's own engine, long gone
    if attempts == "another pid":
        (folder / "attempts.jsonl").write_text(begin_line(engine.pid, 1.0e9))
    try:
        started = psutil.Process(sleeper.pid).create_time()
        res = stop_victim(registry_path, folder, sleeper.pid, f"pid_started = {started!r}\n")
        assert res.returncode == 2, (res.stdout, res.stderr)
        assert res.stderr.count("\n") == 1 and "attempts.jsonl" in res.stderr, res.stderr
        assert f"pid {sleeper.pid}" in res.stderr and "not signalled" in res.stderr
        assert "stopping" not in res.stderr and res.stdout == ""
        time.sleep(0.3)
        assert sleeper.poll() is None  # still alive: never signalled
        assert 'status = "running"' in registry_path.read_text()  # nothing recorded
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_registered_pid_its_attempt_records_is_stopped(
    tmp_path: Path, registry_path: Path
) -> None:
    """The same process, recorded by the run's own attempt as the registry says: stopped."""
    import psutil

    folder = tmp_path / "run"
    folder.mkdir()
    sleeper = stranger()
    try:
        started = psutil.Process(sleeper.pid).create_time()
        (folder / "attempts.jsonl").write_text(begin_line(sleeper.pid, started))
        res = stop_victim(registry_path, folder, sleeper.pid, f"pid_started = {started!r}\n")
        assert res.returncode == 0, (res.stdout, res.stderr)
        assert "stopping" in res.stderr
        assert sleeper.wait(30) is not None  # signalled: its group stopped
    finally:
        sleeper.kill()
        sleeper.wait()
