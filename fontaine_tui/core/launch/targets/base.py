"""Where a run is launched: the protocols every launch target keeps.

A `Target` checks the host (its guards), prepares the run folder, starts what a maker
(core/launch/makers.py) says to start and returns a `Handle` on it: a process here
(launcher.EngineProcess), an engine on another host (remote.RemoteEngine) or a Slurm job
(slurm_job.SlurmJob). The sequence around them (guards, freeze, the exit note, start, the
telemetry recorder, attempt, register) is model/launched.py's, the same for every target. A
target's module keeps `TargetKind`, so that targets/pick.py's table of kinds can pick it from
`--on` and reopen its registered runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from fontaine_tui.core.launch.guards import Finding
    from fontaine_tui.core.launch.makers import ArgvMaker
    from fontaine_tui.core.preset.record import Preset
    from fontaine_tui.core.run.attempts import Attempt
    from fontaine_tui.core.run.exits import ExitInfo
    from fontaine_tui.core.runfolder import RunFolder
    from fontaine_tui.core.runs.registry import Entry, Registry
    from fontaine_tui.core.verdict.prereg import Prereg


class Handle(Protocol):
    """A launched run's process as the launch, the console and `stop` hold it.

    Callers hold this, never a target's own class: what differs between targets (where its
    processes are, who may signal it, the SSH it is read over) is asked of the handle."""

    pid: int  # 0: none on this host (a Slurm job)
    who: str  # "engine", or "command" (a preset's own [command], its exit noted: exitnote.py)
    remote: bool  # held by another host's fontaine-tui: its exit is recorded here as seen

    @property
    def ssh_options(self) -> tuple[str, ...]:
        """The ssh client options it is read over (() for a run on this host's side)."""
        ...

    def poll(self) -> ExitInfo | None: ...

    def stop(self) -> ExitInfo: ...

    def close(self) -> None: ...

    def watch(self) -> None:
        """Start following the run where that is deferred (a console opens on it)."""
        ...

    def refusal(self) -> str | None:
        """Why it is never signalled nor cancelled from here, or None."""
        ...

    def elsewhere(self) -> str:
        """Where its processes are, in one line, when not on this host; "" when here."""
        ...

    def release(self, registry: object | None) -> None:
        """Let go of it as a console leaves it (the run goes on).

        A far run's exit seen from here goes into `registry`."""
        ...


@dataclass(frozen=True, slots=True)
class Request:
    """What the user asked of a launch."""

    preset: Preset
    registry: Registry
    output_dir: str | None = None
    resume: bool = False
    yes_ram: bool = False
    poll_s: float = 2.0
    declared: tuple[str, ...] = ()  # --declare-delta: keys launched with as declared deltas


@dataclass(frozen=True, slots=True)
class Started:
    """What a target started, as the registry keeps it."""

    handle: Handle
    run_dir: str
    pid: int = 0
    pid_started: float = 0.0
    job: str = ""
    prereg: Prereg | None = None  # frozen on the far host (launch --on HOST)
    kept: Path | None = None  # that prereg.json's copy here
    extra: Mapping[str, str] = field(default_factory=dict)  # the target's own words


class Target(Protocol):
    """One way to launch.

    `kind` is its line in targets/pick.py's KINDS, recorded in the run's registry entry.
    `host` keys the run in the registry. A `remote` target's far fontaine-tui runs the guards,
    freezes and starts there (`folder` is then None). A target that `starts_here` starts its
    process on this host: a preset's own [command] is then given to `start` under its exit
    note (core/exitnote.py), its handle is the command's, and the telemetry recorder
    (core/host/recorder.py) samples beside it (model/launched.py does all three)."""

    kind: str
    host: str
    remote: bool
    starts_here: bool

    def folder(self, req: Request) -> RunFolder | None: ...

    def check(self, req: Request, folder: RunFolder) -> list[Finding]: ...

    def prepare(self, req: Request, folder: RunFolder, argv: list[str]) -> dict[str, object]:
        """Make the run folder ready, and say where the run goes for prereg.json's provenance.

        The folder is created, and a job script written where the target needs one."""
        ...

    def start(
        self, req: Request, folder: RunFolder | None, argv: list[str], maker: ArgvMaker
    ) -> Started:
        """Start `argv`; InputError (one line) when it could not be started.

        `argv` is the maker's, a [command]'s under its exit note where the target `starts_here`."""
        ...

    def abandon(self, folder: RunFolder) -> None:
        """A start that failed: what `prepare` wrote, removed (prereg.json is the caller's)."""
        ...

    def unregistered(self, started: Started) -> str | None:
        """Why this start cannot go into the registry (stop could not find it safely)."""
        ...

    def said(self, req: Request, started: Started, sha: str, launched_at: str) -> str:
        """The launch's one line for the user."""
        ...

    def where(self, started: Started) -> tuple[str, str]:
        """(the run's folder, its process) as the launch post and the console name them."""
        ...

    def hint(self, started: Started) -> str:
        """How to watch a detached run again."""
        ...


class TargetKind(Protocol):
    """A target's module as targets/pick.py's table of kinds holds it."""

    def target_for(self, on: str | None, ssh_options: Sequence[str]) -> Target | None:
        """The target `--on` names (None: no --on), or None where it names another kind."""
        ...

    def reopen_entry(
        self, entry: Entry, ssh_options: Sequence[str], poll_s: float | None
    ) -> tuple[Handle, Attempt | None]:
        """A registered run's handle again, and the open attempt that vouched for it (or None).

        InputError (one line) where the entry names nothing it could hold."""
        ...


def vouched(entry: Entry) -> tuple[RunFolder, Attempt | None]:
    """The entry's run folder, and its open attempt where that names the entry's process.

    A folder anyone may write never vouches for a process on its own: the attempt counts only
    where the registry agrees on its Slurm job, or on its pid and start time."""
    from fontaine_tui.core.run.attempts import open_attempt
    from fontaine_tui.core.runfolder import RunFolder

    folder = RunFolder(Path(entry.run_dir))
    opened = open_attempt(folder)
    if opened is None:
        return folder, None
    same = (
        opened.job == entry.job
        if entry.job
        else opened.pid == entry.pid
        and entry.pid_started > 0
        and opened.pid_started == entry.pid_started
    )
    return folder, opened if same else None
