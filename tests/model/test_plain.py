"""`launch --plain` follow loop with a stand-in engine: Ctrl-C detaches, or stops with
--stop-on-exit; records are printed literally."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from fontaine_tui.core.follow.base import Batch
from fontaine_tui.core.log.records import Event
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.run.launcher import EngineProcess, pid_alive
from fontaine_tui.core.run.logtail import read_tail
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.model.plain import PlainWatch, babysit
from fontaine_tui.model.recordline import describe_record

FAKE = str(Path(__file__).parents[1] / "core" / "launch" / "fake_engine.py")


def _launched(tmp_path: Path):
    folder = RunFolder(tmp_path)
    preset = load_preset("smoke")
    prereg = freeze(folder, preset, ["x"], "h")
    engine = EngineProcess.start([sys.executable, FAKE, str(tmp_path), "run"], folder)
    registry = Registry()
    registry.upsert(Entry("smoke", str(tmp_path), "h", pid=engine.pid))
    return folder, preset, prereg, engine, registry


def _ctrl_c_when(folder: RunFolder, step: int, sig: int = signal.SIGINT) -> threading.Thread:
    def fire() -> None:
        deadline = time.monotonic() + 20
        while read_tail(folder).last_step < step and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), sig)  # what a terminal's Ctrl-C (or a kill, a hang-up) does to us

    t = threading.Thread(target=fire, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("stop_on_exit", [False, True])
def test_ctrl_c_in_plain_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stop_on_exit: bool, sig: int
) -> None:
    folder, preset, prereg, engine, registry = _launched(tmp_path)
    try:
        _ctrl_c_when(folder, 5, sig)
        code = babysit(preset, folder, engine, registry, "h", prereg, 0.2, stop_on_exit)
        out = capsys.readouterr().out
        [entry] = registry.entries()
        if not stop_on_exit:
            assert code == 128 + sig and engine.poll() is None and pid_alive(engine.pid)
            assert (
                f"detached ({signal.Signals(sig).name}): engine pid {engine.pid} keeps "
                "running" in out
            )
            assert entry.status == "running" and not folder.verdict.exists()
        else:
            assert code == 1 and engine.poll() is not None
            assert "stopping engine pid" in out and "engine stopped by SIGINT at step" in out
            assert entry.status == "stopped" and entry.exit_code == 130
            assert folder.verdict.exists()
        assert "step 3/40" in out  # records were printed as they came
    finally:
        if engine.poll() is None:
            engine.stop(grace_int=10)


def test_records_are_printed_literally(tmp_path: Path) -> None:
    ev = Event(3, 0.0, "error", "bad \x1b[31mred\x1b[0m [bold]x[/bold]\r\n")
    text = describe_record(ev, 40)
    assert "\x1b" not in text and "\r" not in text and "\\x1b[31m" in text
    assert "[bold]x[/bold]" in text  # markup is not interpreted either


def test_warnings_are_printed_once_when_new(tmp_path: Path) -> None:
    folder, preset, prereg, engine, registry = _launched(tmp_path)
    try:
        buf = io.StringIO()
        watch = PlainWatch(preset, folder, engine, prereg, out=buf)
        deadline = time.monotonic() + 20
        while read_tail(folder).last_step < 4:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        asyncio.run(watch.report.take(Batch(folder.log.read_bytes().split(b"\n")[:-1], 1)))
        asyncio.run(watch.check())
        asyncio.run(watch.check())
        text = buf.getvalue()
        assert text.count("INFO   first-poll since ") == 1  # the panel's words
    finally:
        engine.stop(grace_int=10)


def test_the_final_read_with_a_broken_ledger_says_so_and_applies_what_precedes(tmp_path):
    """The exit-time read (verdict.json, the last verdict) survives an edited ledger: the
    break is printed, the amendments before it count, none after it."""
    from fontaine_tui.core.log.read import load_log
    from fontaine_tui.core.verdict.ledger import declare_amendment
    from tests.logs import write_log

    folder, preset, prereg, engine, registry = _launched(tmp_path)
    engine.stop(grace_int=10)
    declare_amendment(folder, factor=2.0, last_step_seen=5, preset=preset)
    declare_amendment(folder, factor=3.0, last_step_seen=6, preset=preset)
    lines = folder.amendments.read_bytes().splitlines(keepends=True)
    folder.amendments.write_bytes(lines[0] + lines[1].replace(b'"factor":3.0', b'"factor":1.0'))
    write_log(folder.log, steps=40, probes={10: (3.0, 3.0), 20: (3.1, 3.0), 40: (3.2, 3.0)})
    buf = io.StringIO()
    v = PlainWatch(preset, folder, engine, prereg, out=buf).verdict(load_log(folder.log))
    assert buf.getvalue() == (
        f"WARNING: {folder.amendments}:2: its content does not match its "
        "hash (edited); amendments from line 2 on are not applied\n"
    )
    assert [(a.id, a.status) for a in v.amendments] == [(1, "applied"), (2, "refused")]
