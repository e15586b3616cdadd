"""When a launched run is restarted: its `[recovery]` contract held to an attempt's end.

An attempt's end is one of the contract's causes (core/preset/recovery.py) or none:

- preemption: a SIGKILL, SIGTERM, SIGINT or SIGHUP this program did not send (a spot reclaim,
  a scheduler), or Slurm's PREEMPTED;
- oom: the kernel's OOM killer, by the engine's cgroup counters (core/host/oomkill.py), or
  Slurm's OUT_OF_MEMORY;
- node_failure: Slurm's NODE_FAIL or BOOT_FAIL.

A Slurm job's end is the scheduler's word alone: its TIMEOUT, DEADLINE or an administrator's
CANCELLED kill the job too, but are none of these.

A crash, a CUDA or host allocation failure the trainer raised itself, a non-finite loss, a
finished run, a stop by a user (`stop`, the console's q, recorded in attempts.jsonl before its
signals) or by a gate (stop_on_lock) is none: the same run would end the same way again.
A run whose last logged loss is not finite is never restarted, whatever ended it. `plan`
says whether the attempt's end makes a restart, and why not in words; `recovery_read` is what
verdict.json and the card say of the contract and the restarts used.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.recovery import BACKOFF_MAX_S, RecoverySpec
from fontaine_tui.core.run import attempts
from fontaine_tui.core.run.exits import ExitInfo
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.record import RecoveryRead

OUTSIDE = ("SIGKILL", "SIGTERM", "SIGINT", "SIGHUP")
SLURM = re.compile(r"slurm job \S+: ([A-Z_]+):")  # how slurm_job.scheduler_exit says its end
SLURM_CAUSE = {
    "PREEMPTED": "preemption",
    "NODE_FAIL": "node_failure",
    "BOOT_FAIL": "node_failure",
    "OUT_OF_MEMORY": "oom",
}


@dataclass(frozen=True, slots=True)
class Restart:
    """A restart due: the k-th of the contract's N, after `cause` (`detail`: what says so)."""

    number: int
    of: int
    cause: str
    detail: str
    wait_s: float

    def said(self, detail: str | None = None) -> str:
        """The one line a watcher says before it waits and restarts.

        `detail`: the exit's words as the watcher shows them (blinded: core/run/exits.py's
        `shown_detail`), else the detail as read."""
        return (
            f"restart {self.number} of {self.of} in {self.wait_s:g} s ([recovery]): "
            f"{self.cause} ({self.detail if detail is None else detail})"
        )


def recovery_cause(info: ExitInfo) -> str | None:
    """The [recovery] cause of an attempt's end, or None for an end that is never restarted."""
    if info.stopped_for is not None or info.sent is not None:
        return None  # a stop this program made: the user's, or a gate's
    if m := SLURM.match(info.output):  # the scheduler's word decides: a TIMEOUT, a CANCELLED
        return SLURM_CAUSE.get(m.group(1))  # by an administrator is no preemption
    cause = info.cause
    if cause == "oom-killed":
        return "oom"
    if cause == "killed" and info.signal in OUTSIDE:
        return "preemption"
    if cause == "stopped" and info.signal in OUTSIDE:  # checkpointed on a signal from outside
        return "preemption"
    return None


def nonfinite_loss_words(store: RunStore) -> str:
    """The last logged train loss in words when it is not finite, else ""."""
    if not store.steps or not store.has_columns:
        return ""
    x = store.columns["loss"][-1]
    return "" if math.isfinite(x) else f"loss is {x!r} at step {store.steps[-1]}"


def restarts_used(folder: RunFolder) -> list[attempts.Attempt]:
    """The attempts that were restarts under [recovery], in order."""
    return [a for a in attempts.read_attempts(folder) if a.restart is not None]


def user_stopped(folder: RunFolder, attempt: int | None) -> str:
    """Why no restart follows attempt `attempt`: a user's stop recorded for it ("" when none).

    `stop` records it before its signals; a stop made while the restart waits its backoff
    (the attempt already ended), and a Ctrl-C in that wait, record it too (attempts.stopping).
    `plan` asks it at the attempt's end, and the wait asks it again until the restart starts."""
    if attempt is not None and attempts.stop_asked(folder, attempt):
        return "a user stopped it"
    return ""


def plan(
    spec: RecoverySpec,
    info: ExitInfo,
    folder: RunFolder,
    attempt: int | None,
    store: RunStore,
) -> tuple[Restart | None, str]:
    """Whether attempt `attempt`'s end makes a restart: (the restart, "") or (None, why not).

    Why not is "" where there is nothing to say: no [recovery], or a run that finished."""
    if not spec.enabled or info.cause == "finished":
        return None, ""
    if why := user_stopped(folder, attempt):
        return None, f"not restarted ([recovery]): {why}"
    if nan := nonfinite_loss_words(store):
        return None, f"not restarted ([recovery]): the loss is not finite ({nan})"
    cause = recovery_cause(info)
    if cause is None:
        return None, (
            f"not restarted ([recovery]): it ended {info.cause}, not by {' or '.join(spec.on)}"
        )
    if cause not in spec.on:
        return None, (
            f"not restarted ([recovery]): {cause} is not among its causes ({', '.join(spec.on)})"
        )
    used = len(restarts_used(folder))
    if used >= spec.max_restarts:
        return None, (
            f"not restarted ([recovery]): max_restarts = {spec.max_restarts} reached "
            f"({used} restart{'s' if used != 1 else ''} used); it ended by {cause}"
        )
    k = used + 1
    wait = min(spec.backoff_s * 2 ** (k - 1), BACKOFF_MAX_S)
    return Restart(k, spec.max_restarts, cause, info.cause_detail, wait), ""


def recovery_read(spec: RecoverySpec, ran: Iterable[attempts.Attempt]) -> RecoveryRead | None:
    """The contract and the restarts among `ran` (a run's attempts); None without a contract.

    verdict.json and the card say it."""
    if not spec.enabled:
        return None
    made = tuple((a.number, a.restart[2]) for a in ran if a.restart is not None)
    return RecoveryRead(spec.max_restarts, spec.on, made)
