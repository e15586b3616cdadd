"""Fixtures for the follower tests: local sources in both wake-up modes and a real sshd."""

from __future__ import annotations

import pytest

from fontaine_tui.core.follow.local import LocalRun
from tests.follow.sshd_helper import Sshd, find_sshd


@pytest.fixture(params=["inotify", "polling"])
def make_local(request):
    """LocalRun factory, once with inotify wake-ups and once polling only (coreutils-style)."""
    inotify = request.param == "inotify"
    made: list[LocalRun] = []

    def make(folder, **kw) -> LocalRun:
        kw.setdefault("poll_s", 0.25 if inotify else 0.01)
        src = LocalRun(folder, inotify=inotify, **kw)
        made.append(src)
        return src

    return make


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    if find_sshd() is None:
        pytest.skip("sshd not found (install openssh-server)")
    server = Sshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()
