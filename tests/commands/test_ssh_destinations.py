"""Every ssh destination is checked before ssh runs: a user or host part beginning with '-'
(ssh would read it as an option), empty, or holding white space or a control character is
refused in one line, exit 2, wherever it comes from (launch --on, a registry entry that
`stop` or `runs` would reach). A stand-in `ssh` on PATH proves ssh never ran."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.runs.registry import Entry, Registry


@pytest.fixture
def env(tmp_path: Path, registry_path: Path) -> dict[str, str]:
    """A PATH whose ssh only leaves a mark, and an empty config."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ssh = bin_dir / "ssh"
    ssh.write_text(f"#!/bin/sh\ntouch {tmp_path / 'SSH-RAN'}\nexit 255\n")
    ssh.chmod(ssh.stat().st_mode | stat.S_IXUSR)
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "FONTAINE_REGISTRY": str(registry_path),
    }


def cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=Path(env["XDG_CONFIG_HOME"]).parent,
    )


def refused(res: subprocess.CompletedProcess, tmp_path: Path) -> None:
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert "may not begin with '-'" in res.stderr, res.stderr
    assert not (tmp_path / "SSH-RAN").exists()


@pytest.mark.parametrize(
    "on",
    ["user@-h", "user@-oProxyCommand=touch", "-user@h", "@h", "user@", "user@h\x01", "us er@h"],
)
def test_launch_on_checks_the_user_and_the_host(tmp_path: Path, env, on: str) -> None:
    refused(cli(env, "launch", "smoke", f"--on={on}"), tmp_path)


@pytest.mark.parametrize("host", ["-oProxyCommand=touch PWNED", "user@-oProxyCommand=x"])
def test_stop_of_a_registry_host_beginning_with_a_dash(tmp_path: Path, env, host: str) -> None:
    Registry().upsert(Entry(name="far", run_dir="/runs/far", host=host, pid=4242, pid_started=1.0))
    refused(cli(env, "stop", "far", "--yes"), tmp_path)


@pytest.mark.parametrize("host", ["-oProxyCommand=touch PWNED", "user@-oProxyCommand=x"])
def test_runs_of_a_registry_host_beginning_with_a_dash(tmp_path: Path, env, host: str) -> None:
    Registry().upsert(Entry(name="far", run_dir="/runs/far", host=host, pid=4242, pid_started=1.0))
    refused(cli(env, "runs", "--timeout", "5"), tmp_path)
