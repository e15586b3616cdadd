"""Build and run the console: a session over a run's records, the app, the telemetry sampler.

The console is a session over a source, the app over the session, this host's or the far
host's telemetry sampler, and the registry for the runs mode. A launch's console holds its
LaunchedRun (model/launched.py), and `watch_remote` watches a run launched on another host.

Importing this module loads no Textual: `load_app` does, when a console opens, so the
commands import it at their top, and --plain, the headless commands and every --help run
without Textual.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from fontaine_tui.core.follow.base import RunSource
from fontaine_tui.core.follow.replay import ReplayRun
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.runs.fleet import Fleet, control_dir, host_envs
from fontaine_tui.core.runs.registry import Registry, default_path
from fontaine_tui.model.launched import LaunchedRun, LaunchEnd
from fontaine_tui.model.runs import RegistryReader
from fontaine_tui.model.sampler import Sampler, live_telemetry
from fontaine_tui.model.session import Process, Session

if TYPE_CHECKING:
    from fontaine_tui.app import FontaineApp


def load_app() -> type[FontaineApp]:
    """The console's Textual app, imported now: the one place the command line loads Textual.

    Raises ImportError where this build has no console (then --plain is the way)."""
    from fontaine_tui.app import FontaineApp

    return FontaineApp


DRAWN = "━│╭╮╰╯┤…—"  # characters every mode draws (bars, borders, the header's ellipsis)


def no_console_here() -> str | None:
    """Why this terminal cannot hold the console, or None where it can.

    The console reads its keys from stdin, draws on stderr and takes the screen: a stdin,
    stdout or stderr that is no terminal (a file, a pipe, /dev/null: a script, a job, CI) or a
    TERM that says dumb or nothing cannot hold it.
    """
    if not sys.stdout.isatty():
        return "stdout is not a terminal"
    if not sys.stderr.isatty():
        return "stderr is not a terminal"
    term = os.environ.get("TERM", "")
    if term in ("", "dumb"):
        return f"TERM is {term}" if term else "TERM is not set"
    if not sys.stdin.isatty():  # its keys (q, the modes) come from nowhere: it never ends
        return "stdin is not a terminal"
    return _cannot_draw()


def _cannot_draw() -> str | None:
    """Which of stdout and stderr has an encoding that cannot draw the console, or None.

    Its boxes and bars would be drawn as \\u2501 escapes."""
    for name, stream in (("stdout", sys.stdout), ("stderr", sys.stderr)):
        encoding = getattr(stream, "encoding", None) or "ascii"
        try:
            DRAWN.encode(encoding)
        except (UnicodeEncodeError, LookupError):
            return f"{name}'s encoding ({encoding}) cannot draw the console"
    return None


def plain_instead(asked: bool) -> bool:
    """Whether a command that opens the console prints its --plain form instead.

    It does where --plain was `asked` for, or where this terminal cannot hold the console
    (`no_console_here`); the latter is said in one line on stderr. Every command that opens
    the console (demo, replay, attach, launch) asks here before it follows the run, so the
    plain form, its checks and its exit code are the whole of what it does.
    """
    if asked:
        return True
    why = no_console_here()
    if why is None:
        return False
    print(f"fontaine-tui: {why}: printing the plain form (--plain)", file=sys.stderr)
    return True


def make_app(
    *,
    source: RunSource,
    preset: Preset,
    telemetry: Sampler | None = None,
    clock: Callable[[], float] = time.time,
    process: Process | None = None,
    registry: RegistryReader | None = None,
    kind: str | None = None,
    folder: Path | None = None,
    start_mode: str = "monitor",
    frame_s: float | None = None,  # None: the app's own pacing (app.FRAME_S, app.CHART_S)
    chart_s: float | None = None,
    babysit_host: str | None = None,
    fleet: Fleet | None = None,
    launched: LaunchEnd | None = None,
    announce: tuple[str, str, str] | None = None,
    ssh_options: tuple[str, ...] = (),
    blind: bool = False,
    export_folder: Path | None = None,
) -> FontaineApp:
    """Build the console app over any record source.

    Tests inject a replay, a clock and telemetry. `launched` is the run a launch console
    ends when it sees its process exit. `export_folder`: where `e` writes its export, where
    the run folder is not kept (the demo's temporary copy); None: into the run folder.
    """
    if kind is None:
        kind = (
            "launch"
            if process is not None
            else "replay"
            if isinstance(source, ReplayRun)
            else "attach"
        )
    session = Session(source, preset, kind, process, folder)
    session.blind_asked = blind  # the viewer's --blind (core/verdict/blind.py)
    session.export_folder = export_folder
    return load_app()(
        session,
        telemetry=telemetry,
        clock=clock,
        registry=registry,
        start_mode=start_mode,
        frame_s=frame_s,
        chart_s=chart_s,
        babysit_host=babysit_host,
        fleet=fleet,
        launched=launched,
        announce=announce,
        ssh_options=ssh_options,
    )


def run_console(
    *,
    source: RunSource,
    preset: Preset,
    mode: str,
    process: Process | None = None,
    registry: RegistryReader | None = None,
    clock: Callable[[], float] = time.time,
    telemetry: Sampler | None = None,
    launched: LaunchedRun | None = None,
    announce: tuple[str, str, str] | None = None,
    ssh_options: tuple[str, ...] = (),
    blind: bool = False,
    export_folder: Path | None = None,
) -> int:
    """Run the console in this terminal until it quits, and return its exit code.

    `mode` is launch, attach or replay. Without a registry, the runs mode reads the default
    one (FONTAINE_REGISTRY or ~). A live run is babysat (model/babysitter.py) from here.
    `launched` (launch only) is the run's process: its launch post is sent first, and its end
    is done (`LaunchedRun.finish_seen`, in a worker thread, with the console's babysitter)
    once the console sees the process exit. `announce` (folder, what, prereg sha256) is
    another launch post to send first.
    """
    if registry is None:
        registry = Registry()
    if launched is not None:  # its own process and launch post, where none other is given
        process = process if process is not None else launched.handle
        announce = announce if announce is not None else launched.announcement
    telemetry, why = _sampler(telemetry, mode, source, process)
    state = Path(getattr(registry, "path", default_path())).parent
    fleet = Fleet(state / "fleet.json", control_dir(), hostname(), ssh_options, envs=host_envs())
    app = make_app(
        source=source,
        preset=preset,
        telemetry=telemetry,
        clock=clock,
        process=process,
        registry=registry,
        kind=mode,
        babysit_host=None if mode == "replay" else hostname(),
        fleet=fleet,
        launched=launched if mode == "launch" else None,
        announce=announce,
        ssh_options=ssh_options,
        blind=blind,
        export_folder=export_folder,
    )
    if why:
        app.telemetry_reason = why
    app.run()
    return int(app.return_code or 0)


def _sampler(
    given: Sampler | None, mode: str, source: RunSource, process: Process | None
) -> tuple[Sampler | None, str]:
    """The telemetry sampler (the one given, none on a replay, else the live run's), and why none.

    A Slurm job's node has no live sampler here: `why` says so, for the panel."""
    if given is not None or mode == "replay":
        return given, ""
    return live_telemetry(source, process)


def watch_remote(
    source: RunSource,
    preset: Preset,
    launched: LaunchedRun,
    announce: tuple[str, str, str] | None = None,
    blind: bool = False,
) -> int:
    """Run the console on a run launched on another host.

    Such a run comes from `launch --on`, or from `attach HOST:PATH` of one. Quitting asks
    whether to stop it there (over SSH) or detach. An exit the console saw goes into the
    registry here.
    """
    engine = launched.handle
    engine.watch()  # its state polled over SSH while the console is open
    try:
        code = run_console(
            source=source,
            preset=preset,
            mode="attach",
            process=engine,
            registry=launched.registry,
            announce=announce,
            ssh_options=engine.ssh_options,
            blind=blind,
        )
    finally:
        engine.close()
    info = launched.record_exit()
    if info is not None:
        metrics, blinded = launched.blind_rule()
        print(info.describe(metrics, blinded or blind))
    return code
