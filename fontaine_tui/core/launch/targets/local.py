"""`launch PRESET`: the run starts on this host, in its own session (launcher.EngineProcess)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fontaine_tui.core import exitnote
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host import pgroup
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.host.telemetry import TelemetrySnapshot, sample
from fontaine_tui.core.launch import guards
from fontaine_tui.core.launch.engine_argv import run_dir
from fontaine_tui.core.launch.targets.base import Request, Started, vouched
from fontaine_tui.core.run.attempts import Attempt, read_attempts
from fontaine_tui.core.run.launcher import EngineProcess, found_again, pid_alive, process_label
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.text import literal

if TYPE_CHECKING:
    from fontaine_tui.core.launch.makers import ArgvMaker
    from fontaine_tui.core.runs.registry import Entry


class LocalTarget:
    """This host: its GPUs and RAM checked (guards.check_all), the process started here."""

    kind = "local"
    remote = False
    starts_here = True  # a child of this program's, in its own session

    def __init__(self) -> None:
        self.host = hostname()
        self.telemetry: TelemetrySnapshot | None = None  # the guards' sample, for prereg.json

    def folder(self, req: Request) -> RunFolder:
        return RunFolder(run_dir(req.preset, req.output_dir).resolve())

    def check(self, req: Request, folder: RunFolder) -> list[guards.Finding]:
        entry = req.registry.find(folder.root, self.host)
        running = None
        if entry is not None and entry.status in ("running", "attached"):
            if pid_alive(entry.pid, entry.pid_started or None):
                running = entry.pid
            elif left := pgroup.runs_on(entry.pid, entry.pid_started or None):
                running = left[0].pid  # its process gone, what it started runs on
        self.telemetry = sample()
        return guards.check_all(
            req.preset,
            folder,
            self.telemetry,
            resume=req.resume,
            yes_ram=req.yes_ram,
            running_pid=running,
            cwd=Path.cwd(),
            declared=req.declared,
        )

    def prepare(self, req: Request, folder: RunFolder, argv: list[str]) -> dict[str, object]:
        folder.root.mkdir(parents=True, exist_ok=True)
        telemetry = self.telemetry if self.telemetry is not None else sample()
        return {
            "device": {
                "requested": req.preset.platform.get("device", ""),
                "gpus": [f"{g.name} {g.uuid}" for g in telemetry.gpus or ()],
                "gpu_status": telemetry.gpu_status,
            }
        }

    def start(
        self, req: Request, folder: RunFolder | None, argv: list[str], maker: ArgvMaker
    ) -> Started:
        assert folder is not None  # a local target always has its folder here
        try:
            engine = EngineProcess.start(
                argv,
                folder,
                env=maker.env(req.preset, folder.root),
                cwd=maker.cwd(req.preset, folder.root),
            )
        except OSError as exc:
            what = "the command" if req.preset.command is not None else "the engine"
            shown = exitnote.command_of(argv)[0]
            raise InputError(f"cannot start {what} ({shown}): {exc.strerror or exc}") from None
        return Started(engine, str(folder.root), engine.pid, engine.started or 0.0)

    def abandon(self, folder: RunFolder) -> None:
        pass  # prepare made the folder only

    def unregistered(self, started: Started) -> str | None:
        if started.pid_started > 0:
            return None
        return (
            f"engine pid {started.pid}: its start time could not be read, so `stop` "
            "could not tell it from a later process with that pid"
        )

    def said(self, req: Request, started: Started, sha: str, launched_at: str) -> str:
        what = "resumed" if req.resume else "launched"
        return (
            f"{what} {req.preset.name}: {process_label(started.handle)} in "
            f"{literal(started.run_dir)} (prereg sha256 {sha[:12]}, launched {launched_at})"
        )

    def where(self, started: Started) -> tuple[str, str]:
        return started.run_dir, process_label(started.handle)

    def hint(self, started: Started) -> str:
        return (
            f"  watch it: fontaine-tui attach {literal(started.run_dir)}  "
            "(or: fontaine-tui babysit)"
        )


def target_for(on: str | None, ssh_options: Sequence[str] = ()) -> LocalTarget | None:
    """No --on: this host."""
    return LocalTarget() if not on else None


def reopen_entry(
    entry: Entry, ssh_options: Sequence[str] = (), poll_s: float | None = None
) -> tuple[EngineProcess, Attempt | None]:
    """A registered run's process on this host, and the open attempt that vouched for it.

    Without one it is the registry's pid, signalled only where an attempt of the run records
    that pid and start (`reopen_registered`)."""
    folder, opened = vouched(entry)
    if opened is not None:
        return reopen(folder, opened), opened
    return reopen_registered(folder, entry.pid, entry.pid_started), None


def reopen(folder: RunFolder, attempt: Attempt) -> EngineProcess:
    """The attempt's process, found again by pid.

    It is judged from the attempt's own start: its offsets in the log and output, and its
    OOM-kill counters."""
    return found_again(folder, attempt.pid, attempt.pid_started, attempt.since, attempt.baseline())


def reopen_registered(folder: RunFolder, pid: int, started: float | None) -> EngineProcess:
    """A pid the registry names for the run, found again where no open attempt vouches for it.

    It is signalled only where one of the run's attempts (its begin line, written by the launch
    that started it) records that pid with that start time: a registry entry alone never
    names a process to signal (EngineProcess.refusal says why)."""
    engine = EngineProcess.reattach(folder, pid, started)
    ran = read_attempts(folder, alive=lambda p, s: True)
    if engine.started is not None and not any(
        a.pid == pid and a.pid_started == engine.started for a in ran
    ):
        engine.untied = (
            f"engine pid {pid}: the registry names it, but no attempt of this run in "
            f"{folder.attempts.name} records that pid with its start time (the run never "
            "started it); not signalled (stop it by hand if it is yours)"
        )
    return engine
