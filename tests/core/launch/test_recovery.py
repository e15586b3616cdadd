"""core/run/recovery.py: which ends the preset's [recovery] restarts, and which never.

The exits are built as the targets build them: `exit_info` over a run folder's real files,
and Slurm's states through `scheduler_exit` (what SlurmJob.poll returns). A real SIGKILL, a
real OOM kill in a memory cgroup and a real user's stop are in tests/commands/test_recovery.py.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from fontaine_tui.core.host.oomkill import MemoryEvidence
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.recovery import RecoverySpec
from fontaine_tui.core.run import recovery
from fontaine_tui.core.run.exits import exit_info
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.slurm.client import JobState
from fontaine_tui.core.slurm.job import scheduler_exit

SPEC = RecoverySpec(3)


@pytest.fixture
def folder(tmp_path: Path) -> RunFolder:
    return RunFolder(tmp_path)


def _ran_to(folder: RunFolder, step: int, loss: float = 1.0) -> None:
    line = {"kind": "train", "step": step, "loss": loss, "time": 1.0}
    folder.log.write_text(json.dumps(line) + "\n")


@pytest.mark.parametrize(
    ("returncode", "sent", "expected"),
    [
        (-9, None, "preemption"),  # SIGKILL from outside: a reclaim, a scheduler
        (-15, None, "preemption"),  # SIGTERM from outside, no end event
        (-9, "SIGKILL", None),  # this program's own stop
        (-2, "SIGINT", None),
        (0, None, None),  # finished
        (1, None, None),  # crashed: the same run would crash again
    ],
)
def test_signals_from_outside_are_preemptions_ours_never(folder, returncode, sent, expected):
    _ran_to(folder, 7)
    info = exit_info(folder, returncode, sent=sent)
    assert recovery.recovery_cause(info) == expected, info.cause


def test_an_oom_kill_counted_by_the_cgroup_is_oom(folder):
    _ran_to(folder, 7)
    counted = MemoryEvidence(cgroup="/sys/fs/cgroup/x", version=2, cgroup_kills=1, limit=1 << 30)
    info = exit_info(folder, -9, memory=counted)
    assert info.cause == "oom-killed" and recovery.recovery_cause(info) == "oom"
    uncounted = dataclasses.replace(counted, cgroup_kills=0)
    assert recovery.recovery_cause(exit_info(folder, -9, memory=uncounted)) == "preemption"


def test_an_allocation_failure_the_trainer_raised_is_never_restarted(folder):
    (folder.root / "engine.out.log").write_text("torch.OutOfMemoryError: CUDA out of memory.\n")
    info = exit_info(folder, 1)
    assert info.cause == "cuda-oom" and recovery.recovery_cause(info) is None


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("PREEMPTED", "preemption"),
        ("NODE_FAIL", "node_failure"),
        ("BOOT_FAIL", "node_failure"),
        ("OUT_OF_MEMORY", "oom"),
        ("TIMEOUT", None),  # the time limit: a restart would meet it again
        ("FAILED", None),
    ],
)
def test_slurm_ends_as_the_scheduler_tells_them(folder, state, expected):
    _ran_to(folder, 7)
    info = scheduler_exit(folder, "4242", JobState(state, 0, 9 if state != "FAILED" else 0))
    assert recovery.recovery_cause(info) == expected, (info.cause, info.output)
    cancelled = scheduler_exit(folder, "4242", JobState(state, 0, 9), sent="SIGINT")
    assert recovery.recovery_cause(cancelled) is None  # whatever it says, we stopped it


def test_plan_says_why_not_and_never_restarts_a_non_finite_loss(folder):
    _ran_to(folder, 7, float("nan"))
    store = load_log(folder.log)
    killed = exit_info(folder, -9)
    due, why = recovery.plan(SPEC, killed, folder, 1, store)
    assert due is None and why == (
        "not restarted ([recovery]): the loss is not finite (loss is nan at step 7)"
    )
    due, why = recovery.plan(SPEC, killed, folder, 1, RunStore())
    assert due is not None and (due.number, due.of, due.cause, due.wait_s) == (
        1,
        3,
        "preemption",
        2.0,
    )
    quick = RecoverySpec(3, backoff_s=0.25)  # the preset's backoff_s: the first wait
    first, _ = recovery.plan(quick, killed, folder, 1, RunStore())
    assert first is not None and first.wait_s == 0.25
    due, why = recovery.plan(RecoverySpec(3, ("oom",)), killed, folder, 1, RunStore())
    assert due is None and "preemption is not among its causes (oom)" in why
    assert recovery.plan(RecoverySpec(), killed, folder, 1, RunStore()) == (None, "")
    assert recovery.plan(SPEC, exit_info(folder, 0), folder, 1, RunStore()) == (None, "")
