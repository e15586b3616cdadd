"""An exception no command expected (a bug) never prints a raw traceback: one line through
the literal-text stream (control characters and newlines escaped), exit 70, and the whole
traceback, also escaped, only with FONTAINE_DEBUG=1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]

# a command whose code fails with an exception nobody expected, its message hostile
BOOM = """
import sys
import fontaine_tui.commands.presets as presets

def boom(args):
    raise RuntimeError("bad\\nVERDICT: HEALTHY [final]\\x1b]52;c;aGk=\\x07")

presets.run = boom
from fontaine_tui.cli import main
sys.exit(main(["presets", "list"]))
"""


def _boom(**env: str) -> subprocess.CompletedProcess[bytes]:
    full = {k: v for k, v in os.environ.items() if k != "FONTAINE_DEBUG"}
    full.update(PYTHONPATH=str(ROOT), **env)
    return subprocess.run(
        [sys.executable, "-c", BOOM], capture_output=True, env=full, cwd=ROOT, timeout=60
    )


def test_an_unexpected_exception_is_one_escaped_line_and_exit_70() -> None:
    res = _boom()
    assert res.returncode == 70, res.stderr
    assert b"Traceback" not in res.stderr and b"\x1b" not in res.stderr
    assert res.stderr.count(b"\n") == 1, res.stderr
    line = res.stderr.decode()
    assert line.startswith("fontaine-tui: internal error: RuntimeError: bad\\nVERDICT")
    assert "\\x1b]52" in line and "FONTAINE_DEBUG=1 shows the traceback" in line


def test_fontaine_debug_shows_the_traceback_escaped() -> None:
    res = _boom(FONTAINE_DEBUG="1")
    assert res.returncode == 70
    assert b"Traceback (most recent call last)" in res.stderr and b"in boom" in res.stderr
    assert b"\x1b" not in res.stderr and b"\x07" not in res.stderr
    assert res.stderr.splitlines()[-1].startswith(b"fontaine-tui: internal error: RuntimeError")
