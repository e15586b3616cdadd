"""A signal to the group while exitnote starts its command reaches the command once.

exitnote's parent ignores the group's signals and leaves them to its child. A signal that
comes before the child exists, or between the fork and the exec, has no command to act on
yet; it must still stop the command, or a Ctrl-C at launch leaves a trainer running until a
stop escalates to SIGTERM a minute later. One that comes once the command runs must reach it
once, not twice: a trainer reads a second SIGINT as "quit now, skip the checkpoint". Each
case is made certain here: a driver runs the real module's `main` in a session of its own
and sends the signal at the very point the case names, through a hook on the real fork path,
or strace holds the parent at that point while the signal comes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.core import exitnote

DRIVER = """
import os, signal, sys
from fontaine_tui.core import exitnote

where = sys.argv[1]
signal.pthread_sigmask(signal.SIG_BLOCK, exitnote.FORWARDED)  # as `python -m` does at once
if where == "before the fork":
    real_fork = os.fork

    def fork():
        os.killpg(0, signal.SIGINT)  # the wrapper holds it; no child yet
        return real_fork()

    os.fork = fork
elif where == "between fork and exec":
    real_exec_child = exitnote._exec_child

    def exec_child(*args):
        os.killpg(0, signal.SIGINT)  # from the forked child, to both, before exec
        real_exec_child(*args)

    exitnote._exec_child = exec_child
sys.exit(exitnote.main(sys.argv[2:]))
"""

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def _run(argv: list[str], timeout: float) -> tuple[subprocess.Popen[str], int | None]:
    proc = subprocess.Popen(argv, start_new_session=True, stderr=subprocess.PIPE, text=True)
    try:
        rc: int | None = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        rc = None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc, rc


def _noted(note: Path) -> dict[str, object]:
    (line,) = note.read_text().splitlines()
    return json.loads(line)


@pytest.mark.parametrize("where", ["before the fork", "between fork and exec", "never"])
def test_a_signal_while_the_command_starts_still_reaches_it(tmp_path: Path, where: str) -> None:
    note = tmp_path / "command.exits.jsonl"
    started = time.monotonic()
    proc, rc = _run(
        [sys.executable, "-c", DRIVER, where, str(note), "--", *SLEEPER],
        timeout=2 if where == "never" else 20,
    )
    if where == "never":  # the control: nothing sent, the command keeps sleeping
        assert rc is None
        return
    assert rc == -2, (rc, proc.stderr.read() if proc.stderr else "")
    assert time.monotonic() - started < 20
    doc = _noted(note)
    assert doc["pid"] == proc.pid and doc["signal"] == "SIGINT" and doc["code"] is None


GRACEFUL = """
import os, signal, sys, time
got = []
signal.signal(signal.SIG{0}, lambda *a: got.append(1))
print(os.getpgrp(), flush=True)
time.sleep(1.5)
print("handled", len(got), flush=True)
"""


def _strace_works() -> bool:
    if shutil.which("strace") is None:
        return False
    done = subprocess.run(["strace", "-o", "/dev/null", "true"], capture_output=True)
    return done.returncode == 0


@pytest.mark.skipif(not _strace_works(), reason="strace is missing or cannot trace here")
@pytest.mark.parametrize("name", ["INT", "TERM"])
def test_a_signal_once_the_command_runs_reaches_it_once(tmp_path: Path, name: str) -> None:
    # strace holds the parent 0.7 s as it reads which signals it holds: the command (not
    # traced) has started and says so, and the signal comes while the parent is held
    note = tmp_path / "command.exits.jsonl"
    setsid = "import os, sys; os.setsid(); os.execvp(sys.executable, sys.argv[1:])"
    proc = subprocess.Popen(
        ["strace", "-o", "/dev/null", "-e", "trace=rt_sigpending"]
        + ["-e", "inject=rt_sigpending:delay_enter=700000"]
        + [sys.executable, "-c", setsid, sys.executable, "-m", "fontaine_tui.core.exitnote"]
        + [str(note), "--", sys.executable, "-c", GRACEFUL.format(name)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        pgid = int(proc.stdout.readline()) if proc.stdout else 0
        os.killpg(pgid, getattr(signal, f"SIG{name}"))
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert out.strip() == "handled 1", out
    assert _noted(note)["code"] == 0


def test_a_command_that_cannot_start_is_noted_as_127(tmp_path: Path) -> None:
    script = tmp_path / "bad.sh"
    script.write_text("#!/nonexistent/interpreter\necho hi\n")
    script.chmod(0o755)
    note = tmp_path / "command.exits.jsonl"
    proc, rc = _run(
        [sys.executable, "-m", "fontaine_tui.core.exitnote", str(note), "--", str(script)], 20
    )
    assert rc == 127
    assert "cannot start" in (proc.stderr.read() if proc.stderr else "")
    assert _noted(note)["code"] == 127 and _noted(note)["signal"] is None


def test_a_real_time_signal_is_noted_by_its_name_and_passed_on(tmp_path: Path) -> None:
    note = tmp_path / "command.exits.jsonl"
    kill = ["sh", "-c", "kill -s RTMIN+2 $$"]
    proc, rc = _run(
        [sys.executable, "-m", "fontaine_tui.core.exitnote", str(note), "--", *kill], 20
    )
    assert rc == -(signal.SIGRTMIN + 2), (rc, proc.stderr.read() if proc.stderr else "")
    assert _noted(note)["signal"] == "SIGRTMIN+2"
    assert exitnote.signal_number("SIGRTMIN+2") == signal.SIGRTMIN + 2
    assert exitnote.signal_number("SIGTERM") == signal.SIGTERM
    assert exitnote.signal_number("SIGNOPE") is None
