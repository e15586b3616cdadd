"""Output in an encoding that cannot hold every character: a latin-1 or ASCII stdout shows an
em dash as `?` and the command goes on to its end and its own exit code, never an internal
error; an error handler the user chose is kept. The real command in a subprocess (and `main`
in this process, for the handler it puts back)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.cli import main

ROOT = Path(__file__).resolve().parents[2]


def cli(tmp_path: Path, *argv: str, **env: str) -> subprocess.CompletedProcess:
    """The command in a subprocess with `env`; the caller's own encoding settings left out."""
    environ = dict(
        os.environ,
        FONTAINE_BANK=str(tmp_path / "users-bank"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    for key in ("PYTHONIOENCODING", "PYTHONUTF8", "LC_ALL"):
        environ.pop(key, None)
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
        cwd=tmp_path,
        env={**environ, **env},
    )


@pytest.mark.parametrize(
    "encoding, env",
    [
        ("latin-1", {"PYTHONIOENCODING": "latin-1"}),
        ("ascii", {"PYTHONIOENCODING": "ascii"}),
        # the C locale without UTF-8 mode: ASCII, and Python's surrogateescape handler
        ("ascii", {"LC_ALL": "C", "PYTHONUTF8": "0"}),
    ],
)
def test_demo_plain_in_a_narrow_encoding_replaces_what_it_cannot_hold(tmp_path, encoding, env):
    res = cli(tmp_path, "demo", "--plain", "--speed", "1e6", **env)
    assert res.returncode == 0, res.stderr
    assert res.stderr == b""
    out = res.stdout.decode(encoding).splitlines()
    # "delta —" while there is no delta yet: the em dash shows as ?
    assert "verdict: UNDECIDABLE (PROVISIONAL, step 50 of 300, delta ?)" in out
    assert out[-1] == "demo verdict: HEALTHY (final, step 300 of 300, delta -1.9247)"


def test_an_error_handler_the_user_chose_is_kept(tmp_path):
    res = cli(
        tmp_path,
        "demo",
        "--plain",
        "--speed",
        "1e6",
        PYTHONIOENCODING="latin-1:backslashreplace",
    )
    assert res.returncode == 0, res.stderr
    assert b"delta \\u2014)" in res.stdout


def test_main_puts_the_handler_back_on_the_stream_it_was_given(tmp_path, monkeypatch):
    """Called in a process that goes on (a test, a script), main leaves its stdout as it was."""
    monkeypatch.setenv("FONTAINE_BANK", str(tmp_path / "users-bank"))
    monkeypatch.chdir(tmp_path)
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="ascii", write_through=True)
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(["demo", "--plain", "--speed", "1e6"]) == 0
    assert sys.stdout is stdout and stdout.errors == "strict"
    out = stdout.buffer.getvalue().decode("ascii").splitlines()
    assert "verdict: UNDECIDABLE (PROVISIONAL, step 50 of 300, delta ?)" in out
