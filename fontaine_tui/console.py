"""Build and run the console: a session over a source, the app over the session, this
host's or the far host's telemetry sampler, the registry for the runs mode."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from fontaine_tui.app import CHART_S, FRAME_S, FontaineApp, Sampler
from fontaine_tui.core.follow import RunSource
from fontaine_tui.core.follow.replay import ReplayRun
from fontaine_tui.core.launch.fleet import Fleet
from fontaine_tui.core.verdict.presets import Preset
from fontaine_tui.model.babysitter import Babysitter
from fontaine_tui.model.session import Process, Registry, Session


def make_app(*, source: RunSource, preset: Preset, telemetry: Sampler | None = None,
             clock: Callable[[], float] = time.time, process: Process | None = None,
             registry: Registry | None = None, kind: str | None = None,
             folder: Path | None = None,
             start_mode: str = "monitor", frame_s: float = FRAME_S, chart_s: float = CHART_S,
             babysit_host: str | None = None, fleet: Fleet | None = None,
             on_exit: Callable[[Babysitter | None], object] | None = None,
             announce: tuple[str, str, str] | None = None,
             ssh_options: tuple[str, ...] = ()) -> FontaineApp:
    """The console over any record source; tests inject a replay, a clock and telemetry."""
    if kind is None:
        kind = ("launch" if process is not None else
                "replay" if isinstance(source, ReplayRun) else "attach")
    session = Session(source, preset, kind, process, folder)
    return FontaineApp(session, telemetry=telemetry, clock=clock, registry=registry,
                       start_mode=start_mode, frame_s=frame_s, chart_s=chart_s,
                       babysit_host=babysit_host, fleet=fleet, on_exit=on_exit,
                       announce=announce, ssh_options=ssh_options)


def default_telemetry(source: RunSource, process: Process | None = None) -> Sampler | None:
    """This host's sampler (with the engine's pid when launched here), or the far host's
    over the SSH source's connection."""
    from functools import partial

    from fontaine_tui.core.follow.ssh import SshRun
    from fontaine_tui.core.host import telemetry

    if isinstance(source, SshRun):
        return partial(telemetry.sample_remote, source.run_command, source.target.host)
    return partial(telemetry.sample, pid=process.pid if process is not None and process.pid
                   else None)  # a Slurm job has no pid here


def run_console(*, source: RunSource, preset: Preset, mode: str, process: Process | None = None,
                registry: Registry | None = None, clock: Callable[[], float] = time.time,
                telemetry: Sampler | None = None,
                keep: Callable[[FontaineApp], None] | None = None,
                on_exit: Callable[[Babysitter | None], object] | None = None,
                announce: tuple[str, str, str] | None = None,
                ssh_options: tuple[str, ...] = ()) -> int:
    """Run the console in this terminal until quit; `mode` is launch, attach or replay.
    Without a registry, the runs mode reads the default one (FONTAINE_REGISTRY or ~). A live
    run is babysat (model/babysitter.py) from here; `keep` is handed the app once it closed
    (launch: its babysitter sends the final read). `on_exit` is called (in a worker thread,
    with the babysitter) once the console sees the engine exit; `announce` (folder, what,
    prereg sha256) is the launch post its babysitter sends first."""
    if registry is None:
        from fontaine_tui.core.launch.registry import Registry

        registry = Registry()
    if telemetry is None and mode != "replay":
        telemetry = default_telemetry(source, process)
    from fontaine_tui.core.host.memory import hostname
    from fontaine_tui.core.launch.fleet import control_dir, host_envs
    from fontaine_tui.core.launch.registry import default_path

    state = Path(getattr(registry, "path", default_path())).parent
    fleet = Fleet(state / "fleet.json", control_dir(), hostname(), ssh_options,
                  envs=host_envs())
    app = make_app(source=source, preset=preset, telemetry=telemetry, clock=clock,
                   process=process, registry=registry, kind=mode,
                   babysit_host=None if mode == "replay" else hostname(), fleet=fleet,
                   on_exit=on_exit, announce=announce, ssh_options=ssh_options)
    app.run()
    if keep is not None:
        keep(app)
    return int(app.return_code or 0)
