"""`launch --on HOST`: the run launched by HOST's own fontaine-tui over SSH.

That fontaine-tui runs the guards on its machine, freezes prereg.json there and starts the
engine (core/launch/remote.py). Here the run is registered with its host and held as a
RemoteEngine. `--on slurm:PARTITION@LOGIN` is the same, the login node submitting the job."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.launch.remote import POLL_S, RemoteEngine, check_host, launch_on
from fontaine_tui.core.launch.targets.base import Request, Started
from fontaine_tui.core.notify.destinations import config_path
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.hosts import HostSettings, host_settings
from fontaine_tui.core.slurm.submit import parse_on_slurm
from fontaine_tui.core.text import literal

if TYPE_CHECKING:
    from fontaine_tui.core.launch.guards import Finding
    from fontaine_tui.core.launch.makers import ArgvMaker
    from fontaine_tui.core.runs.registry import Entry


class SshHostTarget:
    """[hosts.HOST] in config.toml: its project folder, python and env.

    `partition`: the run is submitted to Slurm from there."""

    kind = "ssh"
    remote = True
    starts_here = False  # the host's own launch notes its exit and records it there

    def __init__(
        self, host: str, on: str, partition: str | None = None, ssh_options: Sequence[str] = ()
    ) -> None:
        check_host(host)
        self.host, self.on, self.partition = host, on, partition
        self.ssh_options = tuple(ssh_options)
        self.settings: HostSettings | None = None

    def folder(self, req: Request) -> RunFolder | None:
        self.settings = host_settings(self.host, config_path())
        return None  # known once the host says where it launched

    def check(self, req: Request, folder: RunFolder) -> list[Finding]:
        return []  # the host's own guards, there

    def prepare(self, req: Request, folder: RunFolder, argv: list[str]) -> dict[str, object]:
        return {}  # frozen there

    def start(
        self, req: Request, folder: RunFolder | None, argv: list[str], maker: ArgvMaker
    ) -> Started:
        assert self.settings is not None  # folder() read them
        done = asyncio.run(
            launch_on(
                self.settings,
                req.preset,
                req.registry.path.parent,
                output_dir=req.output_dir,
                resume=req.resume,
                yes_ram=req.yes_ram,
                ssh_options=self.ssh_options,
                on=None if self.partition is None else f"slurm:{self.partition}",
            )
        )
        handle = RemoteEngine(
            self.settings, done.run_dir, done.pid, self.ssh_options, job=done.job, watch=False
        )  # the console starts polling
        return Started(
            handle,
            done.run_dir,
            done.pid,
            done.pid_started,
            done.job,
            done.prereg,
            done.local_prereg,
        )

    def abandon(self, folder: RunFolder) -> None:
        pass  # nothing is written here before the host launched

    def unregistered(self, started: Started) -> str | None:
        if started.job or started.pid_started > 0:
            return None
        return (
            f"engine pid {started.pid} on {self.host}: its start time was not reported, "
            "so `stop` could not tell it from a later process"
        )

    def said(self, req: Request, started: Started, sha: str, launched_at: str) -> str:
        what = "resumed" if req.resume else "launched"
        return (
            f"{what} {req.preset.name} on {self.on}: {self._how(started)} in "
            f"{literal(str(started.run_dir))} (prereg sha256 {sha[:12]}, launched "
            f"{launched_at}; kept here as {started.kept})"
        )

    def _how(self, started: Started) -> str:
        return (
            f"slurm job {started.job} via {self.host}"
            if started.job
            else f"engine pid {started.pid}"
        )

    def where(self, started: Started) -> tuple[str, str]:
        what = (
            f"slurm job {started.job} via {self.host}"
            if started.job
            else f"engine pid {started.pid} on {self.host}"
        )
        return f"{self.host}:{started.run_dir}", what

    def hint(self, started: Started) -> str:
        return f"  watch it: fontaine-tui attach {literal(self.where(started)[0])}"


def target_for(on: str | None, ssh_options: Sequence[str] = ()) -> SshHostTarget | None:
    """--on HOST, or slurm:PARTITION@LOGIN (the login node submits it)."""
    if not on:
        return None
    parsed = parse_on_slurm(on)
    if parsed is None:
        return SshHostTarget(on, on, None, ssh_options)
    if parsed.host is None:
        return None  # submitted from here: slurm.py's
    return SshHostTarget(parsed.host, on, parsed.partition, ssh_options)


def reopen_entry(
    entry: Entry, ssh_options: Sequence[str] = (), poll_s: float | None = None
) -> tuple[RemoteEngine, None]:
    """A run this host launched on another one, held again by its registry entry.

    Its attempts are the far host's. InputError for a run only attached there (no pid or job
    known: nothing to stop)."""
    if not entry.pid and not entry.job:
        raise InputError(
            f"{entry.host}:{entry.run_dir}: attached, not launched from here "
            f"(no pid or job known); stop it on {entry.host}"
        )
    engine = RemoteEngine(
        host_settings(entry.host, config_path()),
        entry.run_dir,
        entry.pid,
        ssh_options,
        poll_s=poll_s or POLL_S,
        job=entry.job,
    )
    return engine, None
