"""Pick the launch target that `--on` names, and a registered run's handle by its kind.

A registry entry records its kind by where it runs: another host (its `host`), a Slurm job
(`job`), else a process on this host (`pid`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fontaine_tui.core.launch.targets.base import Handle, Target

if TYPE_CHECKING:
    from fontaine_tui.core.launch.attempts import Attempt
    from fontaine_tui.core.launch.registry import Entry
    from fontaine_tui.core.runfolder import RunFolder


def pick_target(on: str | None, ssh_options: Sequence[str] = ()) -> Target:
    """--on: none (this host), HOST, slurm:PARTITION or slurm:PARTITION@LOGIN."""
    if not on:
        from fontaine_tui.core.launch.targets.local import LocalTarget

        return LocalTarget()
    from fontaine_tui.core.launch.slurm import parse_target

    parsed = parse_target(on)
    if parsed is not None and parsed.host is None:
        from fontaine_tui.core.launch.targets.slurm import SlurmTarget

        return SlurmTarget(parsed.partition)
    from fontaine_tui.core.launch.targets.ssh import SshHostTarget

    if parsed is None:
        return SshHostTarget(on, on, None, ssh_options)
    assert parsed.host is not None
    return SshHostTarget(parsed.host, on, parsed.partition, ssh_options)


def reopen_attempt(folder: RunFolder, attempt: Attempt) -> Handle:
    """An attempt's process (or Slurm job) found again, judged from the attempt's own start."""
    if attempt.job:
        from fontaine_tui.core.launch.targets import slurm

        return slurm.reopen(folder, attempt)
    from fontaine_tui.core.launch.targets import local

    return local.reopen(folder, attempt)


def reopen(
    entry: Entry,
    this_host: str,
    ssh_options: Sequence[str] = (),
    poll_s: float | None = None,
) -> tuple[Handle, Attempt | None]:
    """A registered run's handle, and the open attempt it was found by (None: none vouched).

    On this host it is found by its open attempt (its offsets and OOM-kill counters) where the
    registry agrees on its pid and start time, else by the registry's pid or Slurm job. On
    another host it is its RemoteEngine (InputError for a run only attached there)."""
    if entry.host != this_host:
        return reopen_there(entry, ssh_options, poll_s), None
    from pathlib import Path

    from fontaine_tui.core.launch import attempts
    from fontaine_tui.core.runfolder import RunFolder

    folder = RunFolder(Path(entry.run_dir))
    opened = attempts.open_attempt(folder)
    # the run folder's attempt speaks for the engine only where the registry agrees on
    # its start time too: a folder anyone may write never vouches for a pid on its own
    if opened is not None and (
        opened.job == entry.job
        if entry.job
        else opened.pid == entry.pid
        and entry.pid_started > 0
        and opened.pid_started == entry.pid_started
    ):
        return reopen_attempt(folder, opened), opened
    if entry.job:  # cancelled only where an attempt of the run records this job
        from fontaine_tui.core.launch.targets import slurm

        return slurm.reopen_registered(folder, entry.job), None
    from fontaine_tui.core.launch.targets import local

    # signalled only where an attempt of the run records this pid and start
    return local.reopen_registered(folder, entry.pid, entry.pid_started), None


def reopen_there(
    entry: Entry, ssh_options: Sequence[str] = (), poll_s: float | None = None
) -> Handle:
    """A run this host launched on another (the entry's `host`), held again over SSH."""
    from fontaine_tui.core.launch.targets import ssh

    return ssh.reopen(entry, ssh_options, poll_s)
