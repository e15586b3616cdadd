"""A [command] run is the user's own trainer, never "the engine": the console's notice of its
end and the telemetry panel's process line name it a command, as its launch and stop lines
do (tests/commands/test_recovery.py has the trainer)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from fontaine_tui.console import make_app
from fontaine_tui.core.follow.open import run_source
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.launch.targets.local import LocalTarget
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.model.launched import LaunchedRun
from fontaine_tui.model.sampler import live_telemetry
from fontaine_tui.widgets.telemetry_panel import TelemetryPanel
from tests.commands.test_recovery import _preset
from tests.console.conftest import SIZE, until


async def test_a_command_run_is_named_a_command_in_the_console(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)
    monkeypatch.setenv("FONTAINE_TELEMETRY_S", "0.2")  # the recorder's history, soon
    preset = load_preset(_preset(tmp_path, "once", ""))
    launched = LaunchedRun.launch(LocalTarget(), preset, poll_s=0.2)
    folder, handle = Path(launched.run_dir), launched.handle
    assert handle.who == "command"
    source = run_source(launched.run_dir, preset.source)
    app = make_app(
        source=source,
        preset=preset,
        process=handle,
        kind="launch",
        babysit_host=hostname(),
        launched=launched,
        telemetry=live_telemetry(source, handle)[0],
    )

    def panel() -> str:
        return str(app.screen.query_one(TelemetryPanel).render())

    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: any(folder.glob("paused-*")), timeout=60)
            await until(pilot, lambda: f"pid {handle.pid}:" in panel(), timeout=30)
            assert f"command pid {handle.pid}:" in panel() and "engine pid" not in panel(), panel()
            await until(pilot, lambda: "command mem" in panel(), timeout=30)  # its history
            assert "command CPU" in panel() and "engine " not in panel(), panel()
            os.killpg(handle.pid, signal.SIGKILL)
            await until(pilot, lambda: launched.code is not None, timeout=60)
            said = [n.message for n in app._notifications]
    finally:
        if handle.poll() is None:
            os.killpg(handle.pid, signal.SIGKILL)
        handle.close()
    ends = [m for m in said if m.startswith(("engine ", "command "))]
    assert ends and all(m.startswith("command ") for m in ends), said
