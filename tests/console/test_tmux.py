"""The real installed command in a real terminal: `fontaine-tui replay` inside tmux."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

from tests.console.conftest import make_run

TMUX = shutil.which("tmux")
CMD = shutil.which("fontaine-tui")
pytestmark = [
    pytest.mark.skipif(TMUX is None, reason="tmux is not installed"),
    pytest.mark.skipif(CMD is None, reason="fontaine-tui is not installed"),
]


def tmux(sock: str, *args: str) -> str:
    return subprocess.run(
        [TMUX, "-L", sock, *args], capture_output=True, text=True, timeout=10
    ).stdout


def wait_pane(sock: str, want: list[str], timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    pane = ""
    while time.monotonic() < deadline:
        pane = tmux(sock, "capture-pane", "-p", "-t", "t")
        if all(w in pane for w in want):
            return pane
        time.sleep(0.2)
    raise AssertionError(f"never saw {want} in the pane:\n{pane}")


def test_replay_in_tmux_shows_the_verdict(tmp_path):
    log = make_run(tmp_path / "run", engine_out="engine: [bold red]x[/] \x1b[31mred\n")
    sock = f"fontaine-test-{os.getpid()}"
    env_cmd = f"TEXTUAL_ANIMATIONS=none {CMD} replay {log} --preset demosonly_1gpu"
    try:
        subprocess.run(
            [
                TMUX,
                "-L",
                sock,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                "120",
                "-y",
                "40",
                env_cmd,
            ],
            check=True,
            timeout=10,
        )
        pane = wait_pane(sock, ["REPLAY", "step 1000 / 1000"])
        assert "engine: [bold red]x[/] \\x1b[31mred" in pane  # literal in a real terminal
        tmux(sock, "send-keys", "-t", "t", "v")
        pane = wait_pane(sock, ["AMBIGUOUS  [FINAL]", "read at step 1000 of 1000"])
        assert "delta +0.6929" in pane
        assert "Rigonly-class result: escalate." in pane
        tmux(sock, "send-keys", "-t", "t", "Left")
        pane = wait_pane(sock, ["AMBIGUOUS  [PROVISIONAL]", "read at step 750 of 1000"])
        tmux(sock, "send-keys", "-t", "t", "q")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if (
                subprocess.run(
                    [TMUX, "-L", sock, "has-session", "-t", "t"], capture_output=True
                ).returncode
                != 0
            ):
                break  # the command quit and its pane closed
            time.sleep(0.2)
        else:
            raise AssertionError("q did not quit the console")
    finally:
        subprocess.run([TMUX, "-L", sock, "kill-server"], capture_output=True, timeout=10)


def test_osc52_in_a_preset_never_reaches_the_clipboard_in_a_real_terminal(tmp_path):
    """tmux with set-clipboard on turns an OSC 52 it receives into a paste buffer: after the
    verdict screen, the runs screen and the plain verdict showed text holding one, there is
    none."""
    from tests.console.test_hostile_text import _evil_run

    preset_path, folder, registry = _evil_run(tmp_path)
    sock = f"fontaine-osc-{os.getpid()}"
    env = f"TEXTUAL_ANIMATIONS=none FONTAINE_REGISTRY={registry}"
    conf = tmp_path / "tmux.conf"
    conf.write_text("set -g set-clipboard on\n")
    console_cmd = f"{env} {CMD} replay '{folder}/train_log.jsonl'"
    plain_cmd = f"{env} {CMD} verdict '{folder}'; {env} {CMD} runs; sleep 30"
    try:
        subprocess.run(
            [
                TMUX,
                "-L",
                sock,
                "-f",
                str(conf),
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                "160",
                "-y",
                "50",
                console_cmd,
            ],
            check=True,
            timeout=10,
        )
        wait_pane(sock, ["REPLAY", "step 1000 / 1000"])
        tmux(sock, "send-keys", "-t", "t", "v")
        wait_pane(sock, ["interpretation:", "\\x1b]52;c;UFdO"])
        tmux(sock, "send-keys", "-t", "t", "r")
        wait_pane(sock, ["registry", "\\x1b]52;c;UFdO"])
        tmux(sock, "new-window", "-t", "t", plain_cmd)
        wait_pane(sock, ["interpretation", "\\x1b]52;c;UFdO"])
        time.sleep(0.5)
        buffers = tmux(sock, "list-buffers")
        assert "PWN" not in buffers and buffers.strip() == "", buffers
    finally:
        subprocess.run([TMUX, "-L", sock, "kill-server"], capture_output=True, timeout=10)


def test_demo_in_tmux_monitor_probes_verdict(tmp_path):
    """`fontaine-tui demo` in a real terminal: the replay reaches its end, then the probes
    chart with the banked curve and the final verdict; q quits."""
    sock = f"fontaine-demo-{os.getpid()}"
    # without COLUMNS and LINES (the test process may hold 80 and 24): the pane's own size
    cmd = (
        f"cd {tmp_path} && env -u COLUMNS -u LINES TEXTUAL_ANIMATIONS=none "
        f"FONTAINE_BANK={tmp_path}/bank FONTAINE_REGISTRY={tmp_path}/registry.toml "
        f"{CMD} demo --speed 100"
    )
    try:
        subprocess.run(
            [
                TMUX,
                "-L",
                sock,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                "120",
                "-y",
                "40",
                cmd,
            ],
            check=True,
            timeout=10,
        )
        wait_pane(sock, ["REPLAY (ENDED)", "step 300 / 300", "training losses"])
        tmux(sock, "send-keys", "-t", "t", "p")
        # each awaited whole: a capture can fall between two writes of one frame
        wait_pane(sock, ["dist2 (banked", "this run delta(150->s)", "1 banked run(s) as whole"])
        tmux(sock, "send-keys", "-t", "t", "v")
        wait_pane(
            sock,
            ["HEALTHY  [FINAL]  read at step 300 of 300", "decision locked at step 250 (HEALTHY)"],
        )
        tmux(sock, "send-keys", "-t", "t", "e")  # the export outlives the demo's copy
        wait_pane(sock, ["fontaine-demo-export/verdict.json", "is a temporary copy)"])
        tmux(sock, "send-keys", "-t", "t", "q")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if (
                subprocess.run(
                    [TMUX, "-L", sock, "has-session", "-t", "t"], capture_output=True
                ).returncode
                != 0
            ):
                break
            time.sleep(0.2)
        else:
            raise AssertionError("q did not quit the demo")
        assert not (tmp_path / "bank").exists() and not (tmp_path / "registry.toml").exists()
        exported = tmp_path / "fontaine-demo-export" / "verdict.json"
        assert json.loads(exported.read_text())["verdict"] == "HEALTHY"
    finally:
        subprocess.run([TMUX, "-L", sock, "kill-server"], capture_output=True, timeout=10)
