"""A signal to the group while exitnote starts its command reaches the command, never lost.

exitnote's parent ignores the group's signals and leaves them to its child. A signal that
comes before the child exists, or between the fork and the exec, has no child to act on
yet; it must still stop the command, or a Ctrl-C at launch leaves a trainer running until
a stop escalates to SIGTERM a minute later. Each case is made certain here: a driver runs
the real module's `main` in a session of its own, and sends SIGINT to that group at the
very point the case names, through a hook on the real fork path.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

DRIVER = """
import os, signal, subprocess, sys
from fontaine_tui.core import exitnote

where = sys.argv[1]
if where == "before the fork":
    real = subprocess.Popen

    def popen(*args, **kwargs):
        os.killpg(0, signal.SIGINT)  # the wrapper has its handlers; no child yet
        return real(*args, **kwargs)

    subprocess.Popen = popen
elif where == "between fork and exec":
    real_in_child = exitnote._in_child

    def in_child():
        os.kill(os.getpid(), signal.SIGINT)  # in the forked child, before exec
        real_in_child()

    exitnote._in_child = in_child
sys.exit(exitnote.main(sys.argv[2:]))
"""

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


@pytest.mark.parametrize("where", ["before the fork", "between fork and exec", "never"])
def test_a_signal_while_the_command_starts_still_reaches_it(tmp_path: Path, where: str) -> None:
    note = tmp_path / "command.exits.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, where, str(note), "--", *SLEEPER],
        start_new_session=True,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = time.monotonic()
    try:
        rc = proc.wait(timeout=2 if where == "never" else 20)
    except subprocess.TimeoutExpired:
        rc = None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if where == "never":  # the control: nothing sent, the command keeps sleeping
        assert rc is None
        return
    assert rc == -2, (rc, proc.stderr.read() if proc.stderr else "")
    assert time.monotonic() - started < 20
    (line,) = note.read_text().splitlines()
    doc = json.loads(line)
    assert doc["pid"] == proc.pid and doc["signal"] == "SIGINT" and doc["code"] is None
