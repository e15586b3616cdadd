"""A process's stacks through py-spy, its error line, and the hint without it."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from fontaine_tui.core.host.stacks import INSTALL_HINT, dump, py_spy

WAITER = (
    "def wait_here_for_the_dump():\n    import time\n    time.sleep(60)\nwait_here_for_the_dump()\n"
)


def test_without_py_spy_the_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no py-spy on PATH, none beside this Python
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    assert py_spy() is None
    assert dump(1).error == INSTALL_HINT


def test_a_failing_py_spy_shows_its_error_line(tmp_path):
    fake = tmp_path / "py-spy"  # a stand-in that fails as py-spy does without ptrace
    fake.write_text("#!/bin/sh\necho 'Error: Operation not permitted (os error 1)' >&2\nexit 1\n")
    fake.chmod(0o755)
    got = dump(1, exe=str(fake))
    assert got.error == "py-spy: Error: Operation not permitted (os error 1)"
    assert got.text == ""


@pytest.mark.skipif(py_spy() is None, reason="py-spy is not installed (pip install py-spy)")
def test_dump_of_a_live_python():
    child = subprocess.Popen([sys.executable, "-c", WAITER])
    try:
        time.sleep(0.5)
        got = dump(child.pid)
        if "permit" in got.error.lower() or "ptrace" in got.error.lower():
            pytest.skip(f"ptrace refused here: {got.error}")
        assert got.error == "", got.error
        assert "wait_here_for_the_dump" in got.text
    finally:
        child.kill()
        child.wait(10)
