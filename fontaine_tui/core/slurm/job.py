"""A run's Slurm job as the console's handle: its state polled, its exit read, its stop.

`SlurmJob` is the console's handle on the job (`poll`, `stop`, as EngineProcess): a thread
asks the scheduler every few seconds (slurm_client.query), so the console never waits on the
scheduler. `scheduler_exit` gives the job's end as the engine's log does, with what Slurm
says about it (a time limit, a preemption, its own OOM kill). `stop` is the local sequence
through `scancel --full --signal`: SIGINT (the engine checkpoints and exits), SIGTERM, then
`scancel` itself; a job still pending is cancelled.

A job is signalled only once it is tied to the run (`SlurmJob.refusal`): one this program just
submitted, or one an attempt of the run records (attempts.jsonl) whose record at the scheduler
(`scontrol show job`) names the run's folder as its WorkDir and the run's name as its
JobName, as `slurm_client.submit` gave them. A job id the registry alone names is never
cancelled, and its end is never taken for the run's.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from fontaine_tui.core.childenv import child_env
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.oomkill import MemoryEvidence, MemoryWatch
from fontaine_tui.core.run.exits import ExitInfo, exit_info
from fontaine_tui.core.run.logtail import command_step, launched_who
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.slurm.client import (
    LOOK_S,
    QUERY_TIMEOUT_S,
    JobState,
    query,
    show_job,
    tool,
)
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict.prereg import read_prereg

POLL_S = 3.0
# SlurmJob.stop's graces: after SIGINT (the engine checkpoints), after SIGTERM, after scancel
GRACE_INT_S, GRACE_TERM_S, GRACE_CANCEL_S = 60.0, 30.0, 120.0
# ends the scheduler caused: said with the exit (the engine's log alone would not know)
SCHEDULER_ENDS = {
    "TIMEOUT": "the job reached its time limit",
    "OUT_OF_MEMORY": "the job went over its memory request (Slurm's OOM kill)",
    "NODE_FAIL": "a node of the job failed",
    "PREEMPTED": "the job was preempted",
    "BOOT_FAIL": "a node of the job did not boot",
    "DEADLINE": "the job reached its deadline",
    "CANCELLED": "the job was cancelled (scancel, or an administrator)",
    "REVOKED": "the job was revoked (a federated sibling ran it)",
}


def offsets(folder: RunFolder) -> tuple[int, int]:
    """Where this attempt starts in train_log.jsonl and engine.out.log (its `since`)."""

    def size(path: Path) -> int:
        try:
            return path.stat().st_size
        except FileNotFoundError:
            return 0

    return size(folder.log), size(folder.engine_out)


def stop_bound(
    grace_int: float = GRACE_INT_S,
    grace_term: float = GRACE_TERM_S,
    grace_cancel: float = GRACE_CANCEL_S,
) -> float:
    """The longest SlurmJob.stop can take with these graces.

    That is its first status query, then for each of SIGINT, SIGTERM and scancel: a scancel
    call, the grace, and the query that runs past it. Every scheduler command is counted at its
    whole QUERY_TIMEOUT_S."""
    return LOOK_S + 3 * (QUERY_TIMEOUT_S + LOOK_S) + grace_int + grace_term + grace_cancel


def scheduler_exit(
    folder: RunFolder,
    job: str,
    state: JobState,
    since: tuple[int, int] = (0, 0),
    sent: str | None = None,
) -> ExitInfo:
    """The exit as the engine's log and output give it, with what Slurm says about it.

    Slurm may say a time limit, a preemption, or its own OOM kill (its cgroup's, so the cause is
    oom-killed)."""
    memory = None
    if state.state == "OUT_OF_MEMORY":
        memory = MemoryEvidence(cgroup=f"slurm job {job}", cgroup_kills=1)
    who = launched_who(folder)
    info = exit_info(folder, state.returncode(), since, memory, sent, who)
    if who == "command":  # its steps are in its own trainer's log
        info = dataclasses.replace(info, last_step=max(info.last_step, command_step(folder)))
    why = SCHEDULER_ENDS.get(state.state)
    if why is None or (state.state == "CANCELLED" and sent):  # a cancel we sent says nothing
        return info
    return _with_schedulers_end(info, f"slurm job {job}: {state.state}: {why}")


def _with_schedulers_end(info: ExitInfo, said: str) -> ExitInfo:
    """The exit with what Slurm said of its end before the engine's last line.

    An end the engine neither logged nor gave a code or signal for was Slurm's kill."""
    info = dataclasses.replace(
        info, output=said if not info.output else f"{said}; the engine's last line: {info.output}"
    )
    if info.code is None and info.signal is None and info.event not in ("end", "error"):
        info = dataclasses.replace(info, signal="SIGKILL")
    return info


def not_the_runs(
    folder: RunFolder, job: str, env: Mapping[str, str] | None = None, uid: int | None = None
) -> str:
    """Why the scheduler's job `job` is not the run's in `folder` ("" when it is).

    The job is the run's where `scontrol show job` gives the run folder as its WorkDir, the
    run's name (prereg.json's) as its JobName (what `slurm_client.submit` asked for) and this
    user (`uid`, default ours) in its UserId, "name(uid)": root or an operator never cancels
    another user's job that took the same folder and name."""
    try:
        run = read_prereg(folder).preset["run"]
        name = str(run["name"]) if isinstance(run, Mapping) else ""
    except (InputError, OSError, KeyError) as exc:
        return f"slurm job {job}: the run's name cannot be read from {folder.prereg} ({exc})"
    fields = show_job(job, env)
    if fields is None:
        return (
            f"slurm job {job}: the scheduler shows no such job (scontrol show job), so it "
            f"cannot be told to be the run's"
        )
    return (
        _other_workdir(job, fields, folder)
        or _other_name(job, fields, name)
        or _other_user(job, fields, os.getuid() if uid is None else uid)
    )


def _other_workdir(job: str, fields: Mapping[str, str], folder: RunFolder) -> str:
    """Why the job's WorkDir is not the run folder ("" when it is)."""
    work = fields.get("WorkDir", "")
    if work and (
        work == str(folder.root) or os.path.realpath(work) == os.path.realpath(folder.root)
    ):
        return ""
    return (
        f"slurm job {job}: its WorkDir is {literal(work)}, not the run folder "
        f"{literal(str(folder.root))}: not the run's job"
    )


def _other_name(job: str, fields: Mapping[str, str], name: str) -> str:
    """Why the job's JobName is not the run's name ("" when it is)."""
    if fields.get("JobName") == name:
        return ""
    return (
        f"slurm job {job}: its JobName is {literal(fields.get('JobName', ''))}, not "
        f"the run's name {literal(name)}: not the run's job"
    )


def _other_user(job: str, fields: Mapping[str, str], uid: int) -> str:
    """Why the job's UserId, scontrol's "name(uid)", is not `uid`'s ("" when it is)."""
    user = fields.get("UserId", "")
    if user.endswith(f"({uid})"):
        return ""
    return (
        f"slurm job {job}: its UserId is {literal(user)}, not this user's uid {uid}: "
        "not the run's job"
    )


class SlurmJob:
    """A run's Slurm job as the console's `Process`.

    `poll` answers from the last status query (a thread asks every `poll_s`). `stop` runs the
    stop sequence through scancel, for a job tied to the run only (`refusal`). `submitted`: this
    program has just submitted it for the run."""

    pid = 0  # no process here: the job runs on a node Slurm picks
    remote = False  # submitted from this host
    ssh_options: tuple[str, ...] = ()

    def __init__(
        self,
        folder: RunFolder,
        job: str,
        since: tuple[int, int] = (0, 0),
        env: Mapping[str, str] | None = None,
        poll_s: float = POLL_S,
        watch: bool = True,
        submitted: bool = False,
    ) -> None:
        self.folder, self.job, self.since, self.env = folder, job, since, env
        self.who = "engine"  # the scheduler says how the job ended: no exit note
        self.untied = ""  # why no attempt of the run records this job (attempts.registered_job)
        self._tied = submitted  # the scheduler's record of it was found to be the run's
        self.poll_s = poll_s
        self.started: float | None = None
        self.memory = MemoryWatch(0, None, None, None)  # attempts.begin's baseline: none here
        self.sent: str | None = None
        self.last: JobState | None = None
        self._exit: ExitInfo | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        if watch:
            self._thread = threading.Thread(
                target=self._watch, daemon=True, name=f"slurm-job-{job}"
            )
            self._thread.start()

    @property
    def label(self) -> str:
        return f"slurm job {self.job}"

    def look(self) -> JobState | None:
        state = query(self.job, self.env)
        with self._lock:
            if state is not None:
                self.last = state
                if not state.active and self._exit is None:
                    self._exit = scheduler_exit(self.folder, self.job, state, self.since, self.sent)
        return state

    def _watch(self) -> None:
        while not self._done.is_set():
            self.look()
            if self._exit is not None:
                return
            self._done.wait(self.poll_s)

    def _ended(self) -> ExitInfo | None:
        """The run's exit as its job's end gives it; None while the job runs.

        Always None for a job no attempt of the run records (`untied`): its end says nothing
        of the run's, which `stop` would otherwise say and record as ended."""
        return None if self.untied else self._exit

    def poll(self) -> ExitInfo | None:
        if self._thread is None and self._exit is None:
            self.look()
        return self._ended()

    def wait(self, timeout: float | None = None, interval: float = 0.5) -> ExitInfo | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._exit is None:
                self.look()
            if (info := self._ended()) is not None:
                return info
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(interval)

    def refusal(self) -> str | None:
        """Why this job is never signalled nor cancelled, or None.

        A job not submitted here is the run's only where one of its attempts records it and the
        scheduler's record of it names the run's folder, its name and this user
        (`not_the_runs`)."""
        if self.untied:
            return self.untied
        if self._tied:
            return None
        why = not_the_runs(self.folder, self.job, self.env)
        if why:
            return why + "; not cancelled (scancel it by hand if it is yours)"
        self._tied = True
        return None

    def scancel(self, *args: str) -> bool:
        if self.refusal() is not None:
            return False
        try:
            res = subprocess.run(
                [tool("scancel"), *args, self.job],
                capture_output=True,
                text=True,
                timeout=QUERY_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
                env=child_env(self.env),
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        return res.returncode == 0

    def signal_job(self, name: str) -> bool:
        """Send a signal with `scancel --full --signal=NAME` to every process of the job.

        The batch script's processes are included (torchrun and its ranks, as a process group
        here)."""
        if self.poll() is not None:
            return False
        ok = self.scancel("--full", f"--signal={name.removeprefix('SIG')}")
        if ok:
            self.sent = name
        return ok

    def stop(
        self,
        grace_int: float = GRACE_INT_S,
        grace_term: float = GRACE_TERM_S,
        grace_cancel: float = GRACE_CANCEL_S,
    ) -> ExitInfo:
        """Stop the job: SIGINT (the engine checkpoints and exits), SIGTERM, then scancel.

        scancel is Slurm's own SIGTERM-then-SIGKILL. A job not yet running is cancelled at once.
        Raises InputError (nothing sent) for a job not tied to the run (`refusal`)."""
        state = self.look()
        if (info := self._ended()) is not None:
            return info
        if (why := self.refusal()) is not None:
            raise InputError(why)
        if state is not None and state.state == "PENDING":
            self.scancel()  # nothing ran: no signal, Slurm's CANCELLED says it
            info = self.wait(grace_cancel)
        else:
            info = self._signal_then_cancel(grace_int, grace_term, grace_cancel)
        if info is None:
            raise InputError(
                f"slurm job {self.job}: still {self.last.state if self.last else '?'}"
                f" after scancel; see `scontrol show job {self.job}`"
            )
        self.close()
        return info

    def _signal_then_cancel(
        self, grace_int: float, grace_term: float, grace_cancel: float
    ) -> ExitInfo | None:
        """A running job's stop: SIGINT, SIGTERM, each with its grace, then scancel."""
        for sig, grace in (("SIGINT", grace_int), ("SIGTERM", grace_term)):
            self.signal_job(sig)
            if (info := self.wait(grace)) is not None:
                return info
        self.sent = "SIGKILL"
        self.scancel()
        return self.wait(grace_cancel)

    def close(self) -> None:
        self._done.set()

    def watch(self) -> None:
        """Nothing to start: a job made with watch=False is looked up when polled."""

    def elsewhere(self) -> str:
        return (
            f"Slurm job {self.job}: its processes are on the job's node "
            f"(srun --jobid {self.job} --overlap ps -o pid,stat,pcpu,rss,nlwp,args --forest)"
        )

    def release(self, registry: object | None) -> None:
        self.close()  # the owner that submitted it records its end
