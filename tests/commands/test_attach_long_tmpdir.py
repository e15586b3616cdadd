"""`attach HOST:PATH` and `runs` under a $TMPDIR too long for a unix socket's path (108 bytes,
with ssh's own suffix), or holding what ssh reads specially in a ControlPath (a space, a quote,
%, $): the shared connection's control socket goes in a short plain folder of this user's, and
the run is followed over the real sshd; where no such folder can be made, one line says so."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.ssh.control import (
    SOCKET_PATH_MAX,
    new_control_folder,
    shared_control_folder,
)
from tests.logs import records, write_log
from tests.sshd_helper import HOST_ALIAS, attach_plain

pytestmark = pytest.mark.ssh

# ssh's ControlPath %C (40 hex) and the suffix it binds first (a dot and 16 characters)
SOCKET_TAIL = len("/") + 40 + len(".") + 16


def long_tmpdir(tmp_path: Path) -> Path:
    """A $TMPDIR as a soak's round makes it: a private folder a few levels down, 150+ bytes."""
    folder = tmp_path / "fontaine-soak-round-a1b2c3" / "some" / "longer" / "folder"
    folder = folder / ("x" * max(1, 150 - len(os.fsencode(folder))))
    folder.mkdir(parents=True)
    assert len(os.fsencode(folder)) >= 150
    return folder


# short folders under /tmp that ssh would not read as written in `-o ControlPath=`
ODD_NAMES = ("a b", "a%C", "a${HOME}", "a'b\\")


@pytest.fixture(params=ODD_NAMES)
def odd_tmpdir(request) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=request.param, dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_attach_follows_a_run_under_a_long_tmpdir(sshd, tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_log(run / "train_log.jsonl", records())
    res = attach_plain(
        sshd.config,
        run,
        tmp_path / "state",
        TMPDIR=str(long_tmpdir(tmp_path)),
        FONTAINE_SSH_CONNECT_S="5",
    )
    assert res.returncode != 2 and "try by hand" not in res.stderr, res.stderr
    assert "verdict:" in res.stdout and "event end at step 1000" in res.stdout, res.stdout


def test_attach_follows_a_run_under_a_tmpdir_ssh_reads_specially(
    sshd, tmp_path: Path, odd_tmpdir: Path
) -> None:
    run = tmp_path / "run"
    write_log(run / "train_log.jsonl", records())
    res = attach_plain(
        sshd.config, run, tmp_path / "state", TMPDIR=str(odd_tmpdir), FONTAINE_SSH_CONNECT_S="5"
    )
    assert res.returncode != 2 and "try by hand" not in res.stderr, res.stderr
    assert "verdict:" in res.stdout and "event end at step 1000" in res.stdout, res.stdout
    assert list(odd_tmpdir.iterdir()) == []  # nothing of ssh's was made there


def test_runs_looks_over_ssh_under_a_long_or_odd_tmpdir(sshd, tmp_path: Path) -> None:
    """The fleet's shared connection (its own folder, kept between two polls) as well."""
    run = tmp_path / "run"
    write_log(run / "train_log.jsonl", records())
    state = tmp_path / "state"
    assert attach_plain(sshd.config, run, state).returncode != 2  # registers the run
    odd = Path(tempfile.mkdtemp(prefix="a b%C ", dir="/tmp"))
    try:
        for tmpdir in (long_tmpdir(tmp_path), odd):
            res = subprocess.run(
                [sys.executable, "-m", "fontaine_tui", "runs", "--ssh-config", str(sshd.config)],
                capture_output=True,
                text=True,
                timeout=60,
                cwd=Path(__file__).parents[2],
                env={
                    **os.environ,
                    "FONTAINE_REGISTRY": str(state / "babysit.toml"),
                    "TMPDIR": str(tmpdir),
                },
            )
            assert res.returncode == 0, res.stderr
            [row] = [ln for ln in res.stdout.splitlines() if f" {HOST_ALIAS} " in ln]
            assert " ended " in row and " 1000 " in row and "(down)" not in row, res.stdout
        assert list(odd.iterdir()) == []
    finally:
        shutil.rmtree(odd, ignore_errors=True)


def test_each_folder_made_is_short_private_and_ours(tmp_path: Path) -> None:
    under = (str(long_tmpdir(tmp_path)), str(tmp_path), "/tmp")
    name = f"fontaine-test-{os.getpid()}"
    made = [new_control_folder("fontaine-ssh-", under), shared_control_folder(name, under)]
    try:
        assert made[1] == shared_control_folder(name, under)  # kept from one poll to the next
        for folder in made:
            st = folder.lstat()
            assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
            assert st.st_uid == os.getuid()
            assert len(os.fsencode(folder)) + SOCKET_TAIL < SOCKET_PATH_MAX, folder
    finally:
        for folder in made:
            folder.rmdir()


def test_a_shared_name_that_is_not_ours_is_left_alone(tmp_path: Path) -> None:
    """A `fontaine-fleet-UID` that is a link (or open to others) is not used: a new one is."""
    name = f"fontaine-test-{os.getpid()}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    planted = Path("/tmp") / name
    planted.symlink_to(elsewhere)
    try:
        folder = shared_control_folder(name, ["/tmp"])
        assert folder != planted and folder.name.startswith(name + "-"), folder
        assert stat.S_IMODE(folder.lstat().st_mode) == 0o700
        folder.rmdir()
    finally:
        planted.unlink()
    assert elsewhere.is_dir() and list(elsewhere.iterdir()) == []


def test_no_short_folder_is_said_in_one_line(tmp_path: Path) -> None:
    long = long_tmpdir(tmp_path)
    with pytest.raises(InputError) as caught:
        new_control_folder("fontaine-ssh-", [str(long), str(long / "missing")])
    said = str(caught.value)
    assert "\n" not in said and str(long) in said, said
    assert "TMPDIR" in said and "socket" in said, said
    assert list(long.iterdir()) == []  # nothing was left there


def test_no_plain_folder_is_said_in_one_line() -> None:
    odd = Path(tempfile.mkdtemp(prefix="a\nb c", dir="/tmp"))
    try:
        with pytest.raises(InputError) as caught:
            new_control_folder("fontaine-ssh-", [str(odd)])
        said = str(caught.value)
        assert "\n" not in said and "/tmp/a\\nb c" in said and "(holds '\\n')" in said, said
        assert list(odd.iterdir()) == []
    finally:
        odd.rmdir()
