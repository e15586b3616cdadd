"""A first launch says what the engine does before its first record: building the corpus.

The engine builds its corpus before it writes a record (tens of seconds on two busy cores).
It prints what it is doing as `engine: status: ...` lines into engine.out.log, and the launch
shows the latest in its waiting line: `launch --plain` as a line of its own, the console in
its waiting panel. Both run for real, with a corpus folder that does not exist yet; each test
ends the engine it caused to start (its pid from attempts.jsonl).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.core.run.attempts import read_attempts
from fontaine_tui.core.runfolder import RunFolder

pytest.importorskip("torch")
TMUX = shutil.which("tmux")
CMD = shutil.which("fontaine-tui")
ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.engine, pytest.mark.slow]
BUILDING = re.compile(r"building the corpus: \d+ of \d+ episodes")
# the header's second line, beside the progress bar (not the engine.out.log panel's line)
WAITING = re.compile(r"0%\s+(engine: )?building the corpus: \d+ of \d+ episodes")


def _preset(tmp_path: Path) -> Path:
    """pretrain_so101 on a corpus folder of its own, not built yet."""
    text = (ROOT / "presets" / "pretrain_so101.toml").read_text()
    text = text.replace('data_dir = ""', f'data_dir = "{tmp_path / "corpus"}"')
    assert str(tmp_path / "corpus") in text
    path = tmp_path / "cold.toml"
    path.write_text(text.replace('name = "pretrain_so101"', 'name = "cold"'))
    return path


def _end_engine(folder: RunFolder) -> None:
    """Kill the engine the test's launch started (it is left going when the launch goes)."""
    for attempt in read_attempts(folder):
        try:
            os.killpg(attempt.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_launch_plain_says_the_corpus_build_before_the_first_record(tmp_path):
    preset = _preset(tmp_path)
    out = tmp_path / "out"
    folder = RunFolder(out)
    proc = subprocess.Popen(
        [sys.executable, "-m", "fontaine_tui", "launch", str(preset), "--plain"]
        + ["--output-dir", str(out), "--poll", "0.5"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line.rstrip("\n"))
            if BUILDING.search(line) or line.startswith("meta:"):
                break
        said = [s for s in seen if BUILDING.search(s)]
        assert said, "\n".join(seen)
        assert said[0].startswith("engine: building the corpus: "), said
        assert not [s for s in seen if s.startswith("meta:")], "\n".join(seen)
    finally:
        proc.send_signal(signal.SIGINT)  # launch --plain detaches
        try:
            proc.wait(timeout=30)
        finally:
            _end_engine(folder)


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
@pytest.mark.skipif(CMD is None, reason="fontaine-tui is not installed")
def test_the_console_shows_the_corpus_build_while_it_waits(tmp_path, registry_path):
    preset = _preset(tmp_path)
    out = tmp_path / "out"
    sock = f"fontaine-status-{os.getpid()}"
    script = tmp_path / "run.sh"
    script.write_text(
        f"cd '{tmp_path}' && FONTAINE_REGISTRY='{registry_path}' TEXTUAL_ANIMATIONS=none "
        f"'{CMD}' launch '{preset}' --output-dir '{out}'; sleep 60\n"
    )
    pane = ""
    try:
        subprocess.run(
            [TMUX, "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "t"]
            + ["-x", "160", "-y", "50", f"bash {script}"],
            check=True,
            timeout=10,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            pane = subprocess.run(
                [TMUX, "-L", sock, "capture-pane", "-p", "-t", "t"],
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout
            if "LAUNCHING" in pane and WAITING.search(pane):
                break
            time.sleep(0.3)
        else:
            raise AssertionError(f"never saw the corpus build in the console:\n{pane}")
        assert "LAUNCHING" in pane, pane
    finally:
        subprocess.run([TMUX, "-L", sock, "kill-server"], capture_output=True, timeout=10)
        _end_engine(RunFolder(out))
