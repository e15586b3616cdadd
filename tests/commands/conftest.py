"""The non-root login on the test sshd (tests/remote_user.py), one per test session.

One per xdist worker, shared by the modules that ask for it: the far side of `launch --on
HOST` and `--on slurm:PARTITION@HOST`; and its cache folder, holding the run's corpus.
"""

from __future__ import annotations

import importlib.util
import subprocess

import pytest

from tests.remote_user import make, remove, seeded_cache, why_not


@pytest.fixture(scope="session")
def remote(sshd, tmp_path_factory):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("the engine needs torch")
    why = why_not()
    if why:
        pytest.skip(why)
    try:
        user = make(tmp_path_factory.mktemp("remote"), sshd)
    except (subprocess.CalledProcessError, OSError, StopIteration) as exc:
        pytest.skip(f"the non-root login could not be made here: {exc}")
    yield user
    remove(user)


@pytest.fixture(scope="session")
def remote_cache(remote, corpus_dir):
    """The login's $XDG_CACHE_HOME with the test run's corpus in it (remote_user.seeded_cache).

    A remote launch that does not test the cold build sets it, and its engine starts on the
    corpus this run already built, instead of building its own as the login.
    """
    return seeded_cache(remote, corpus_dir)
