"""Fixtures for the follower tests: local sources in both wake-up modes."""

from __future__ import annotations

import pytest

from fontaine_tui.core.follow.local import LocalRun


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
