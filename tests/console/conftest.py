"""Harness for the console tests: replayed fixture logs, a fixed clock, no animations."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest

os.environ["TEXTUAL_ANIMATIONS"] = "none"


from fontaine_tui.core.preset.find import load_preset  # noqa: E402
from tests.logs import RIGONLY_LIKE, records_upto, write_log  # noqa: E402

CLOCK = 1_787_000_600.0
SIZE = (120, 40)


def fixed_clock() -> float:
    return CLOCK


def replay_source(log: Path):
    """The real replay source (as fast as it can read), as `fontaine-tui replay` builds it."""
    from fontaine_tui.core.follow.replay import ReplayRun

    return ReplayRun(log, speed=None)


def make_run(
    folder: Path, upto: int = 1000, probes=RIGONLY_LIKE, engine_out: str | None = None
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    log = write_log(folder / "train_log.jsonl", records_upto(upto, probes))
    if engine_out is not None:
        (folder / "engine.out.log").write_text(engine_out)
    return log


def console(log: Path, **kw):
    from fontaine_tui.console import make_app

    kw.setdefault("preset", load_preset("demosonly_1gpu"))
    kw.setdefault("clock", fixed_clock)
    kw.setdefault("frame_s", 0.05)  # the same coalescing, a shorter wait (see test_batching)
    kw.setdefault("chart_s", 0.1)
    source = kw.pop("source", None) or replay_source(log)
    return make_app(source=source, **kw)


def demo_console(staged, **kw):
    """The console over the demo's staged run (`commands.demo.staged`), as the demo opens it,
    with the tests' clock and pacing; `kw` as make_app's (the demo passes export_folder)."""
    from fontaine_tui.console import make_app

    return make_app(
        source=staged.source,
        preset=staged.preset,
        kind="replay",
        registry=staged.registry,
        clock=fixed_clock,
        frame_s=0.05,
        chart_s=0.1,
        **kw,
    )


def sample_registry(path: Path):
    """A registry with one running and one finished run (runs mode snapshot, screenshot)."""
    from fontaine_tui.core.runs.registry import Entry, Registry

    reg = Registry(path)
    for name, status, pid in (
        ("grasp_sft_v2_demosonly_1gpu_disc", "running", 4242),
        ("smoke", "finished", 0),
    ):
        reg.upsert(
            Entry(
                name=name,
                run_dir=f"outputs/train/{name}",
                host="h100-box",
                preset=name,
                pid=pid,
                launched_at="2026-08-17T18:41:00Z",
                status=status,
            )
        )
    return reg


async def until(pilot, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    async def loop() -> None:
        while not predicate():
            await pilot.pause(0.02)

    await asyncio.wait_for(loop(), timeout)


async def loaded(pilot, step: int) -> None:
    """Wait until the replay reached `step` and a frame showing it was drawn."""
    app = pilot.app
    from fontaine_tui.widgets.chart import Chart

    await until(
        pilot,
        lambda: (
            app.view is not None
            and app.view.progress.step == step
            and app.session.store.last_step == step
            and not any(c.pending for c in app.screen.query(Chart))
        ),
    )
    await pilot.pause()


def text(widget) -> str:
    """What a widget shows, as plain text."""
    import re

    from fontaine_tui.widgets.chart import Chart

    if isinstance(widget, Chart):
        return re.sub(r"\x1b\[[0-9;]*m", "", widget.plt.build())
    return str(widget.render())


@pytest.fixture
def fleet_control():
    """A control folder of the test's own for the fleet's shared SSH connections.

    The fleet keeps its masters 300 s between two polls (ControlPersist): at the test's end
    each one it left in this folder is told to exit, so none outlives the test."""
    import shutil
    import subprocess
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="ff-"))  # short: a socket's path has 108 bytes
    yield folder
    for sock in folder.iterdir():
        if sock.is_socket():
            subprocess.run(
                ["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "fleet-host"],
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=10,
            )
    shutil.rmtree(folder, ignore_errors=True)
