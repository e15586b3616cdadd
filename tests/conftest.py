"""Fixtures for every test: its own registry, a real sshd and the demosonly_1gpu preset.

Each test gets its own babysit registry (the user's is never touched); the run shares one
cache folder, where the engine's corpus is built once. The sshd runs on
127.0.0.1 with throwaway keys, one per session. The preset comes with and without its
amendment.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from fontaine_tui.core.preset.find import load_preset
from tests.sshd_helper import Sshd, find_sshd

PRESETS = Path(__file__).resolve().parents[1] / "presets"

# every test has a time bound; one past it fails with its stacks (tests/timeouts.py); the
# property tests draw the examples of the run's Hypothesis profile (tests/profiles.py)
pytest_plugins = ["tests.timeouts", "tests.profiles"]


def pytest_configure(config: pytest.Config) -> None:
    """Deliver Ctrl-C to the tests' children as a terminal does.

    A suite started in the background by a shell without job control (`nohup bash
    scripts/test &`, some CI runners) inherits SIGINT *ignored*, and an ignored signal stays
    ignored across exec. Every `fontaine-tui` the tests start would then ignore the SIGINT a
    test sends it as the user's Ctrl-C. A handler (not an ignore) is reset to the default in
    each child, so the children start as from a terminal.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the modules that hold long tests (marked slow or engine) first, each kept whole.

    Pytest-xdist hands the tests out in this order and queues a few on each worker: a long
    test handed out last keeps one worker busy while the other, done, waits. Started first,
    the short tests fill both workers' ends. The order within a module stays as written.
    The tests that share a module-scoped fixture are kept on one worker (_keep_together).
    """
    long = {item.path for item in items if item.get_closest_marker("slow")}
    long |= {item.path for item in items if item.get_closest_marker("engine")}
    items.sort(key=lambda item: item.path not in long)  # stable: the rest as collected
    for item in items:
        _keep_together(item)


def _keep_together(item: pytest.Item) -> None:
    """Put a test that uses a module-scoped fixture into its module's xdist group.

    Under `--dist loadgroup` every test without a group is handed out alone, so the tests of
    one module alternate between the workers, and a module-scoped fixture (often a real run
    shared by the module's tests) is made once on each worker that runs one of them. In one
    group they run on one worker, and the fixture is made once. A test that names its own
    group keeps it.
    """
    if item.get_closest_marker("xdist_group") is not None:
        return
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return
    for name in info.names_closure:
        defs = info.name2fixturedefs.get(name, ())
        if defs and defs[-1].scope == "module":
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
            return


@pytest.fixture(autouse=True)
def registry_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own registry; the user's is never touched."""
    path = tmp_path / "state" / "babysit.toml"
    monkeypatch.setenv("FONTAINE_REGISTRY", str(path))
    return path


@pytest.fixture(autouse=True)
def bank_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own comparator bank; the user's is never touched."""
    path = tmp_path / "bank"
    monkeypatch.setenv("FONTAINE_BANK", str(path))
    return path


def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temp folder every worker of this test run shares (under xdist, their basetemps')."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session", autouse=True)
def frame_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One $XDG_CACHE_HOME for the whole test run, shared by its workers.

    The engine keeps its corpus (the default --data-dir) and its decoded-frame cache
    ($XDG_CACHE_HOME/fontaine-engine/frames) there: this process and every engine a test
    starts build the corpus and decode its frames once per run, not once per worker, and the
    user's ~/.cache is never touched. Both are written atomically (tmp file, then rename), so
    the workers' engines share them safely.
    """
    cache = _shared_root(tmp_path_factory) / "xdg-cache"
    cache.mkdir(exist_ok=True)
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache)
    yield cache / "fontaine-engine" / "frames"
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory, frame_cache: Path) -> Path:
    """The engine's default corpus folder, built and its frames decoded once per test run.

    The first worker to ask builds it while the others wait on a lock; a launch without
    --data-dir trains on this same folder.
    """
    import fcntl

    from fontaine_engine import corpus

    root = corpus.default_dir()
    with open(_shared_root(tmp_path_factory) / "corpus.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        corpus.ensure(root)
        corpus.load(root)  # decode the frames once for the run
    return root


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory: pytest.TempPathFactory, corpus_dir: Path) -> Path:
    """One 20-step tiny engine run (tests/engine/conftest.py tiny_argv: probes and checkpoints
    at 10 and 20), trained once per test run and read only.

    tests/engine/test_smoke.py and test_score.py read it, and tests/console/test_rescore.py
    re-scores a copy of it, whichever worker runs them: the first worker to ask trains it
    while the other waits on a lock, as for corpus_dir.
    """
    import fcntl
    import shutil

    from tests.engine.conftest import run_engine, tiny_argv

    root = _shared_root(tmp_path_factory) / "tiny-run"
    out, trained = root / "run", root / "trained"
    root.mkdir(exist_ok=True)
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not trained.exists():  # not yet, or the first try failed: train (again)
            shutil.rmtree(out, ignore_errors=True)
            proc = run_engine(tiny_argv(out, corpus_dir, steps=20))
            assert proc.returncode == 0, proc.stderr
            trained.touch()
    return out


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    if find_sshd() is None:
        pytest.skip("sshd not found (install openssh-server)")
    server = Sshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


@pytest.fixture
def preset():
    """demosonly_1gpu, by name as a user gives it."""
    return load_preset("demosonly_1gpu")


@pytest.fixture
def demosonly():
    return load_preset(PRESETS / "demosonly_1gpu.toml")


@pytest.fixture
def raw_only(tmp_path):
    """demosonly_1gpu without its amendment: the kit's raw rule alone."""
    text = (PRESETS / "demosonly_1gpu.toml").read_text()
    head, _, tail = text.partition("[[amendments]]")
    tail = tail[tail.index("[gates]") :]
    path = tmp_path / "raw_only.toml"
    path.write_text(head + tail)
    return load_preset(path)


@pytest.fixture
def hook():
    """A real webhook on 127.0.0.1 (tests/core/notify/server.py): what it was sent."""
    from tests.core.notify.server import Hook

    server = Hook()
    yield server
    server.close()
