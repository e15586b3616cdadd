"""[hosts.NAME] settings, and the remote command line: run by a real sh, every piece a user
gave arrives literally."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.launch.remote import fontaine_command, keep_prereg
from fontaine_tui.core.runs.hosts import HostSettings, host_settings, parse_hosts


def test_hosts_from_config(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text(
        '[hosts.box]\nproject = "/srv/f"\npython = "/v/bin/python"\n'
        'env = { HF_HOME = "/scratch" }\n'
    )
    assert host_settings("box", cfg) == HostSettings(
        "box", "/srv/f", "/v/bin/python", {"HF_HOME": "/scratch"}
    )
    assert host_settings("other", cfg) == HostSettings("other")
    assert host_settings("x", tmp_path / "none.toml") == HostSettings("x")


@pytest.mark.parametrize(
    "table, key",
    [
        ({"box": {"projct": "/x"}}, "hosts.box.projct"),
        ({"box": {"python": ""}}, "hosts.box.python"),
        ({"box": {"env": {"1BAD": "x"}}}, "hosts.box.env"),
        ({"box": {"env": {"A": 1}}}, "hosts.box.env"),
        ({"box": "x"}, "hosts.box"),
    ],
)
def test_bad_hosts_are_one_line(table, key) -> None:
    with pytest.raises(InputError) as err:
        parse_hosts({"hosts": table}, "config.toml")
    assert f"config.toml: {key}" in str(err.value)


def test_the_remote_command_line_is_literal(tmp_path: Path) -> None:
    project = tmp_path / "my project $(touch PWNED) `touch PWNED`; rm -rf x"
    project.mkdir()
    fake = tmp_path / "py thon"  # stands for the remote python: prints what it was given
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "print(json.dumps([os.getcwd(), os.environ.get('V'), sys.argv[1:]]))\n"
    )
    fake.chmod(0o755)
    settings = HostSettings("h", str(project), str(fake), {"V": "a $(touch PWNED) b"})
    line = fontaine_command(settings, "launch", "x; touch PWNED", "--output-dir", "a b")
    out = subprocess.run(
        ["sh", "-c", line], capture_output=True, text=True, check=True, cwd=tmp_path
    ).stdout
    cwd, v, argv = json.loads(out)
    assert cwd == str(project) and v == "a $(touch PWNED) b"
    assert argv == ["-m", "fontaine_tui", "launch", "x; touch PWNED", "--output-dir", "a b"]
    assert not list(tmp_path.rglob("PWNED"))


def test_the_kept_prereg_is_never_replaced(tmp_path: Path) -> None:
    a = keep_prereg(tmp_path, "h", "/r", b"one")
    assert keep_prereg(tmp_path, "h", "/r", b"one") == a  # a resume: the same bytes
    b = keep_prereg(tmp_path, "h", "/r", b"two")
    assert b != a and a.read_bytes() == b"one" and b.read_bytes() == b"two"
