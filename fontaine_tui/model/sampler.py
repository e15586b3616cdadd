"""The telemetry a watcher samples: this host's, or the far host's for a run over SSH.

The console and the plain report pick the same sampler (`default_telemetry`) and take a
snapshot the same way (`take_sample`): a blocking sampler runs in a thread, the far host's is
awaited.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from functools import partial

from fontaine_tui.core.follow.base import RunSource
from fontaine_tui.core.follow.ssh import SshRun
from fontaine_tui.core.host.telemetry import TelemetrySnapshot, sample, sample_remote

# a telemetry sampler: a snapshot, or a coroutine of one (over SSH)
Sampler = Callable[[], "TelemetrySnapshot | Awaitable[TelemetrySnapshot]"]


def default_telemetry(source: RunSource, pid: int | None = None) -> Sampler:
    """Pick the telemetry sampler: this host's, or the far host's for an SSH source.

    This host's sampler gets the engine's pid when the run was launched here. The far host's
    is read over the SSH source's connection (a foreign run's too, through its transport).
    """
    ssh = getattr(source, "transport", source)
    if isinstance(ssh, SshRun):
        return partial(sample_remote, ssh.run_command, ssh.target.host)
    return partial(sample, pid=pid)


ON_NODE = "slurm job: it runs on its node, whose history is drawn below"


def on_node(process: object) -> bool:
    """Whether a watched run's process is a Slurm job: it runs on a node, not on this host."""
    return bool(getattr(process, "job", ""))


def live_telemetry(source: RunSource, process: object | None) -> tuple[Sampler | None, str]:
    """The live sampler of a watched run and, where there is none, why.

    A Slurm job runs on a node, not on this host nor on the login node the source reads
    through: no live look stands for it (it would be another machine's), and the node's own
    history, which its recorder writes into the run folder, is what the panel draws."""
    if on_node(process):
        return None, ON_NODE
    pid = getattr(process, "pid", None) or None
    return default_telemetry(source, pid), ""


async def take_sample(fn: Sampler) -> TelemetrySnapshot:
    """One snapshot from `fn`, off the event loop."""
    result = fn() if inspect.iscoroutinefunction(fn) else await asyncio.to_thread(fn)
    if inspect.isawaitable(result):
        result = await result
    return result
