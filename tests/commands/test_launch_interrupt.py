"""Ctrl-C after the engine started but before the console drew stops the engine it started.

The real installed command launches a preset's own [command] (a sleeping Python) in a real
tmux pane; the Ctrl-C is typed the moment the launch line shows, while the console is still
loading. The launch stops the process it started, says so in one line, records the stop and
exits as a stopped launch does (1).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from fontaine_tui.core.run.attempts import read_attempts
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Registry

TMUX = shutil.which("tmux")
CMD = shutil.which("fontaine-tui")
pytestmark = [
    pytest.mark.skipif(TMUX is None, reason="tmux is not installed"),
    pytest.mark.skipif(CMD is None, reason="fontaine-tui is not installed"),
]


def _preset(tmp_path: Path) -> Path:
    path = tmp_path / "sleeper.toml"
    path.write_text(f"""[run]
name = "sleeper"
output_dir = "runs/sleeper"

[command]
argv = ["{sys.executable}", "-c", "import time; print('step:1 loss:1.0', flush=True); time.sleep(300)"]

[source]
kind = "lines"
eval = ["loss"]
patterns = ['step:(?P<step>\\S+) loss:(?P<loss>\\S+)']

[verdict]
metric = "loss"
anchor_step = 1
endpoint_step = 2
healthy_max = 0.0
drift_min = 0.2
""")
    return path


def _tmux(sock: str, *args: str) -> str:
    return subprocess.run(
        [TMUX, "-L", sock, *args], capture_output=True, text=True, timeout=10
    ).stdout


def _pane(sock: str) -> str:
    return _tmux(sock, "capture-pane", "-p", "-J", "-S", "-200", "-t", "t")


def _wait(sock: str, want: str, timeout: float, poll: float = 0.02) -> str:
    deadline = time.monotonic() + timeout
    pane = ""
    while time.monotonic() < deadline:
        pane = _pane(sock)
        if want in pane:
            return pane
        time.sleep(poll)
    raise AssertionError(f"never saw {want!r} in the pane:\n{pane}")


def test_ctrl_c_before_the_console_draws_stops_the_launched_process(tmp_path, registry_path):
    preset = _preset(tmp_path)
    sock = f"fontaine-int-{os.getpid()}"
    script = tmp_path / "run.sh"
    script.write_text(
        f"cd '{tmp_path}' && FONTAINE_REGISTRY='{registry_path}' TEXTUAL_ANIMATIONS=none "
        f"'{CMD}' launch '{preset}'; echo EXIT=$?; sleep 60\n"
    )
    folder = RunFolder(tmp_path / "runs" / "sleeper")
    try:
        subprocess.run(
            [TMUX, "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "t"]
            + ["-x", "160", "-y", "50", f"bash {script}"],
            check=True,
            timeout=10,
        )
        pane = _wait(sock, "launched sleeper:", timeout=60)
        _tmux(sock, "send-keys", "-t", "t", "C-c")  # the console is still loading
        pane = _wait(sock, "EXIT=", timeout=60, poll=0.2)
    finally:
        subprocess.run([TMUX, "-L", sock, "kill-server"], capture_output=True, timeout=10)
    pid = read_attempts(folder)[0].pid
    alive = psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    if alive:  # the test cleans up what the launch left going
        os.killpg(pid, 9)
    assert not alive, f"the launched process {pid} is still running:\n{pane}"
    # the terminal echoes the ^C where the cursor is, before the line
    lines = [ln.removeprefix("^C") for ln in pane.splitlines() if "stopping command pid" in ln]
    assert lines == [
        f"SIGINT before the run was watched: stopping command pid {pid} "
        "(SIGINT, then SIGTERM, then SIGKILL)"
    ], pane
    assert "EXIT=1" in pane, pane  # as a stopped launch: its verdict read, not finished
    assert "Traceback" not in pane
    end = read_attempts(folder)[-1]
    assert end.cause not in ("running", "unknown", "finished"), end
    entry = Registry(registry_path).find(str(folder.root.resolve()), _host())
    assert entry is not None and entry.status != "running", entry


def _host() -> str:
    from fontaine_tui.core.host.memory import hostname

    return hostname()
