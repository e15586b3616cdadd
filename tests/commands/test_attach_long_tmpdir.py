"""`attach HOST:PATH` under a $TMPDIR too long for a unix socket's path (108 bytes, with ssh's
own suffix): the shared connection's control socket goes in a short folder of this user's, and
the run is followed over the real sshd; where no short folder can be made, one line says so."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.ssh.control import (
    SOCKET_PATH_MAX,
    new_control_folder,
    shared_control_folder,
)
from tests.logs import records, write_log
from tests.sshd_helper import attach_plain

pytestmark = pytest.mark.ssh

# ssh's ControlPath %C (40 hex) and the suffix it binds first (a dot and 16 characters)
SOCKET_TAIL = len("/") + 40 + len(".") + 16


def long_tmpdir(tmp_path: Path) -> Path:
    """A $TMPDIR as a soak's round makes it: a private folder a few levels down."""
    folder = tmp_path / "fontaine-soak-round-a1b2c3" / "some" / "longer" / "folder"
    folder.mkdir(parents=True)
    # a folder mkdtemp makes there ("fontaine-ssh-" and 8) leaves no room for the socket
    assert len(os.fsencode(folder)) + len("/fontaine-ssh-12345678") + SOCKET_TAIL >= 108
    return folder


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
