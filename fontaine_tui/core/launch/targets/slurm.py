"""`launch --on slurm:PARTITION`: the run as a Slurm batch job, submitted from here.

Its run folder is on a filesystem the nodes share (core/slurm/submit.py: the job script;
client.py: sbatch and the job's state; job.py: the job's handle)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.host.recorder import recorder_on
from fontaine_tui.core.launch import guards
from fontaine_tui.core.launch.command import command_cwd, frozen_env
from fontaine_tui.core.launch.engine_argv import run_dir
from fontaine_tui.core.launch.targets.base import Request, Started, vouched
from fontaine_tui.core.notify.destinations import config_path
from fontaine_tui.core.run.attempts import Attempt, read_attempts
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.slurm import client as slurm_client
from fontaine_tui.core.slurm import job as slurm_job
from fontaine_tui.core.slurm import submit as slurm
from fontaine_tui.core.text import literal

if TYPE_CHECKING:
    from fontaine_tui.core.launch.makers import ArgvMaker
    from fontaine_tui.core.runs.registry import Entry


class SlurmTarget:
    """A partition of the Slurm cluster this host submits to ([slurm] in config.toml)."""

    kind = "slurm"
    remote = False
    starts_here = False  # the scheduler says how the job ended; the job script records it

    def __init__(self, partition: str) -> None:
        self.partition = partition
        self.host = hostname()
        self.script: Path | None = None
        self.sha = ""
        self.created = False
        self.settings: slurm.SlurmSettings | None = None

    def folder(self, req: Request) -> RunFolder:
        settings = slurm.slurm_settings(config_path())
        if req.preset.slurm.get("time"):  # the experiment's limit, frozen with it, over the user's
            settings = dataclasses.replace(settings, time=str(req.preset.slurm["time"]))
        self.settings = settings
        slurm_client.tool("sbatch")  # before anything is written
        return RunFolder(run_dir(req.preset, req.output_dir).resolve())

    def check(self, req: Request, folder: RunFolder) -> list[guards.Finding]:
        entry = req.registry.find(folder.root, self.host)
        if entry is not None and entry.job and entry.status in ("running", "attached"):
            state = slurm_client.query(entry.job)
            if state is not None and state.active:
                raise InputError(
                    f"refusing to launch: {folder.root}: this run is still slurm "
                    f"job {entry.job} ({state.state}; fontaine-tui stop it first)"
                )
        # the folder's guards here; the node's GPUs and RAM are Slurm's request, not this host's
        if req.preset.command is not None:  # the user's command: checked here, run there
            return [
                *guards.check_folder(req.preset, folder, req.resume),
                *guards.check_command(req.preset, folder, req.resume, Path.cwd()),
            ]
        return [
            *guards.check_folder(req.preset, folder, req.resume),
            # the job script runs this interpreter on the node: missing here, it is a warning
            *guards.check_engine(on_node=True),
            *guards.check_delta(req.preset, req.declared, req.resume),
            *guards.check_init(req.preset),
        ]

    def prepare(self, req: Request, folder: RunFolder, argv: list[str]) -> dict[str, object]:
        assert self.settings is not None  # folder() read them
        recorder = (sys.executable, folder.root) if recorder_on() else None
        if req.preset.command is not None:
            text = slurm.render_command_script(
                argv,
                command_cwd(req.preset, Path.cwd()),
                frozen_env(req.preset, folder.root),
                self.settings,
                req.preset.run_name,
                recorder,
            )
        else:
            text = slurm.render_script(
                argv, req.preset.platform, self.settings, req.preset.run_name, recorder
            )
        self.created = not folder.root.exists()
        folder.root.mkdir(parents=True, exist_ok=True)
        self.script = slurm.write_script(folder, text)
        self.sha = hashlib.sha256(text.encode()).hexdigest()
        return {
            "device": {
                "requested": req.preset.platform.get("device", ""),
                "gpus": [],
                "gpu_status": "on the node Slurm picks",
            },
            "slurm": {
                "partition": self.partition,
                "script": self.script.name,
                "script_sha256": self.sha,
            },
        }

    def start(
        self, req: Request, folder: RunFolder | None, argv: list[str], maker: ArgvMaker
    ) -> Started:
        assert folder is not None and self.script is not None  # prepared
        since = slurm_job.offsets(folder)
        job = slurm_client.submit(folder, self.script, self.partition, req.preset.run_name)
        handle = slurm_job.SlurmJob(
            folder, job, since, poll_s=min(req.poll_s, slurm_job.POLL_S), submitted=True
        )
        return Started(handle, str(folder.root), 0, 0.0, job)

    def abandon(self, folder: RunFolder) -> None:
        if self.script is not None:
            self.script.unlink(missing_ok=True)
        if self.created:
            with contextlib.suppress(OSError):  # only when empty: nothing else is removed
                folder.root.rmdir()

    def unregistered(self, started: Started) -> str | None:
        return None  # the job id names it

    def said(self, req: Request, started: Started, sha: str, launched_at: str) -> str:
        what = "resumed" if req.resume else "submitted"
        script = self.script.name if self.script is not None else slurm.SCRIPT
        return (
            f"{what} {req.preset.name} as slurm job {started.job} (partition "
            f"{self.partition}) in {literal(started.run_dir)} (prereg sha256 {sha[:12]}, "
            f"launched {launched_at}; script {script})"
        )

    def where(self, started: Started) -> tuple[str, str]:
        return started.run_dir, f"slurm job {started.job}"

    def hint(self, started: Started) -> str:
        return (
            f"  watch it: fontaine-tui attach {literal(started.run_dir)}  (stop it: "
            f"fontaine-tui stop {started.run_dir})"
        )


def target_for(on: str | None, ssh_options: Sequence[str] = ()) -> SlurmTarget | None:
    """--on slurm:PARTITION (submitted from here; slurm:PARTITION@LOGIN is ssh.py's)."""
    parsed = slurm.parse_on_slurm(on) if on else None
    return SlurmTarget(parsed.partition) if parsed is not None and parsed.host is None else None


def reopen_entry(
    entry: Entry, ssh_options: Sequence[str] = (), poll_s: float | None = None
) -> tuple[slurm_job.SlurmJob, Attempt | None]:
    """A registered run's Slurm job, and the open attempt that vouched for it.

    Without one it is the registry's job, cancelled only where an attempt of the run records it
    (`reopen_registered`)."""
    if not entry.job:
        raise InputError(f"{entry.run_dir}: registered as a Slurm job, but with no job id")
    folder, opened = vouched(entry)
    if opened is not None:
        return reopen(folder, opened), opened
    return reopen_registered(folder, entry.job), None


def reopen(folder: RunFolder, attempt: Attempt) -> slurm_job.SlurmJob:
    """The attempt's Slurm job, found again by id and judged from the attempt's own start."""
    return slurm_job.SlurmJob(folder, attempt.job, attempt.since)


def reopen_registered(folder: RunFolder, job: str) -> slurm_job.SlurmJob:
    """A Slurm job the registry names for the run, where no open attempt vouches for it.

    It is cancelled only where one of the run's attempts (its begin line, written by the launch
    that submitted it) records that job, and the scheduler's record of it is the run's
    (SlurmJob.refusal): a registry entry alone never names a job to cancel."""
    handle = slurm_job.SlurmJob(folder, job)
    ran = read_attempts(folder, alive=lambda p, s: True)
    if not any(a.job == job for a in ran):
        handle.untied = (
            f"slurm job {job}: the registry names it, but no attempt of this run in "
            f"{folder.attempts.name} records it (the run never submitted it); not cancelled "
            "(scancel it by hand if it is yours)"
        )
    return handle
