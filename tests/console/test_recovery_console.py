"""The launch console keeps the preset's [recovery]: a real [command] trainer killed from
outside (a real SIGKILL of its process group) is restarted, its new process watched by the
same console, and the run finishes (tests/commands/test_recovery.py has the trainer). A signal
the processes mode sends is this program's, never a preemption; a quit during the restart's
backoff makes no restart nobody would watch."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from fontaine_tui.console import make_app
from fontaine_tui.core.follow.open import run_source
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.host.proctree import TreeLook
from fontaine_tui.core.launch.targets.local import LocalTarget
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.model.launched import LaunchedRun
from fontaine_tui.model.processes import look, scope_of, signal_member
from fontaine_tui.model.restarts import in_console
from tests.commands.test_recovery import _attempts, _preset
from tests.console.conftest import SIZE, until


async def test_the_console_restarts_a_killed_run_and_watches_it_to_its_end(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)
    preset = load_preset(_preset(tmp_path, "once", "[recovery]\nmax_restarts = 1\nbackoff_s = 0.1"))
    launched = LaunchedRun.launch(LocalTarget(), preset, poll_s=0.2)
    launched.restarter = in_console(launched)  # as `launch` sets it before its console
    folder = Path(launched.run_dir)
    first = launched.handle
    app = make_app(
        source=run_source(launched.run_dir, preset.source),
        preset=preset,
        process=launched.handle,
        kind="launch",
        babysit_host=hostname(),
        launched=launched,
    )
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: any(folder.glob("paused-*")), timeout=60)
            os.killpg(first.pid, signal.SIGKILL)  # as a spot reclaim does
            await until(pilot, lambda: launched.code is not None, timeout=60)
            assert launched.handle is not first and app.session.process is launched.handle
    finally:
        for h in {first, launched.handle}:
            if h.poll() is None:
                os.killpg(h.pid, signal.SIGKILL)
            h.close()
    said = launched.out.getvalue()
    assert "restart 1 of 1 in 0.1 s ([recovery]): preemption" in said, said
    assert "(restart 1 of 1)" in said and "command finished at step 40, exit 0" in said, said
    begins = [a for a in _attempts(folder) if a["event"] == "begin"]
    assert [(b["kind"], b.get("restart")) for b in begins] == [("launch", None), ("resume", 1)]
    doc = json.loads((folder / "verdict.json").read_text())
    assert doc["recovery"]["used"] == 1 and not doc["provisional"]


async def test_quitting_during_the_backoff_makes_no_unwatched_restart(tmp_path, monkeypatch):
    """q while a restart waits its backoff: the restart is not made, the run stays ended."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)
    preset = load_preset(_preset(tmp_path, "once", "[recovery]\nmax_restarts = 3"))
    launched = LaunchedRun.launch(LocalTarget(), preset, poll_s=0.2)
    launched.restarter = in_console(launched)
    folder = Path(launched.run_dir)
    first = launched.handle
    app = make_app(
        source=run_source(launched.run_dir, preset.source),
        preset=preset,
        process=launched.handle,
        kind="launch",
        babysit_host=hostname(),
        launched=launched,
    )
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: any(folder.glob("paused-*")), timeout=60)
            os.killpg(first.pid, signal.SIGKILL)  # a spot reclaim: a restart is due
            await until(pilot, lambda: "restart 1 of 3 in" in launched.out.getvalue(), timeout=30)
            await pilot.press("q")  # the run shows as exited: q quits at once
        code = launched.after_console(0)
        assert launched.handle is first, "a restart was started after the console closed"
    finally:
        for h in {first, launched.handle}:
            if h.poll() is None:
                os.killpg(h.pid, signal.SIGKILL)
            h.close()
    assert code == 1
    said = launched.out.getvalue()
    assert "restart 1 of 3 not made: the console closed during its backoff" in said, said
    assert f"--resume --output-dir {launched.run_dir}` resumes it" in said, said
    begins = [a for a in _attempts(folder) if a["event"] == "begin"]
    assert [b["kind"] for b in begins] == ["launch"]
    assert [a["event"] for a in _attempts(folder)] == ["begin", "end"]


@pytest.mark.parametrize(
    ("which", "name", "cause"),
    [
        ("child", "SIGTERM", "stopped"),
        ("root", "SIGTERM", "stopped"),
        ("root", "SIGKILL", "killed"),
        ("root", "SIGUSR1", "crashed"),
    ],
)
async def test_a_signal_from_the_processes_mode_is_no_preemption(
    tmp_path, monkeypatch, which, name, cause
):
    """k in the processes mode: the trainer ends, and [recovery] does not restart it.

    The root of a [command] is the parent that notes its exit: a signal to it reaches the
    command (its process group), as `stop` sends it. SIGUSR1 is no stop: nothing is recorded,
    and a trainer that dies of it was not preempted either."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)
    preset = load_preset(_preset(tmp_path, "once", "[recovery]\nmax_restarts = 1"))
    launched = LaunchedRun.launch(LocalTarget(), preset, poll_s=0.2)
    launched.restarter = in_console(launched)
    folder = Path(launched.run_dir)
    first = launched.handle
    app = make_app(
        source=run_source(launched.run_dir, preset.source),
        preset=preset,
        process=launched.handle,
        kind="launch",
        babysit_host=hostname(),
        launched=launched,
    )
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: any(folder.glob("paused-*")), timeout=60)
            scope = scope_of(app.session)
            tree = look(scope, TreeLook())
            assert scope.ours and tree is not None and len(tree.members) == 2
            member = tree.members[0] if which == "root" else tree.members[-1]
            outcome = signal_member(scope, member, name)
            assert outcome.severity == "information", outcome.message
            await until(pilot, lambda: launched.code is not None, timeout=30)
            assert launched.handle is first, launched.out.getvalue()
    finally:
        for h in {first, launched.handle}:
            if h.poll() is None:
                os.killpg(h.pid, signal.SIGKILL)
            h.close()
    events = [(a["event"], a.get("kind"), a.get("cause")) for a in _attempts(folder)]
    stop = [("stop", None, None)] if name != "SIGUSR1" else []
    assert events == [("begin", "launch", None), *stop, ("end", None, cause)]
    said = launched.out.getvalue()
    assert "restart 1 of 1" not in said and "from outside the program" not in said, said
