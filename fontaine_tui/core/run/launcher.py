"""Starting and owning the engine's process: its own session, its pid, its stop.

The engine runs in its own session (process group), so the console can close or crash
without taking a nine-hour run with it; a later console finds it again by pid. Its argv is
core/launch/engine_argv.py's (or a preset's own [command]), its exit core/run/exits.py's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from fontaine_tui.core import exitnote
from fontaine_tui.core.atomic import open_own
from fontaine_tui.core.childenv import child_env
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host import pgroup
from fontaine_tui.core.host.oomkill import MemoryWatch
from fontaine_tui.core.host.pids import pid_alive, process_started
from fontaine_tui.core.run.exits import ExitInfo, crash_before, exit_info, stop_asked_of
from fontaine_tui.core.run.logtail import command_step, launched_who
from fontaine_tui.core.runfolder import RunFolder


def _signum(name: str | None) -> int:
    signum = exitnote.signal_number(name)
    return signal.SIGKILL.value if signum is None else signum


def process_label(engine: object) -> str:
    """How a run's process is named to the user: "engine pid N", or its Slurm job."""
    return (
        getattr(engine, "label", None)
        or f"{getattr(engine, 'who', 'engine')} pid {getattr(engine, 'pid', 0)}"
    )


def found_again(
    folder: RunFolder,
    pid: int,
    started: float | None = None,
    since: tuple[int, int] = (0, 0),
    baseline: Mapping[str, object] | None = None,
) -> EngineProcess:
    """A process on this host found again by pid (started by an earlier console).

    Judged from its attempt's start where one records it: `since` (its offsets in the log and
    output) and `baseline` (the OOM-kill counters then, attempts.Attempt.baseline)."""
    memory = MemoryWatch.restore(pid, baseline) if baseline is not None else None
    return EngineProcess.reattach(folder, pid, started, since, memory)


class EngineProcess:
    """An engine run: started here (a child) or found again by pid (reattached).

    `memory` follows its OOM-kill counters; each poll while it runs refreshes its cgroup."""

    remote = False  # on this host
    job = ""  # no Slurm job
    ssh_options: tuple[str, ...] = ()

    def __init__(
        self,
        folder: RunFolder,
        pid: int,
        popen: subprocess.Popen | None,
        started: float | None,
        since: tuple[int, int] = (0, 0),
        memory: MemoryWatch | None = None,
    ) -> None:
        self.folder, self.pid, self._popen = folder, pid, popen
        self.started: float | None = None  # 0.0 or none at all: not recorded
        if isinstance(started, (int, float)) and not isinstance(started, bool) and started > 0:
            self.started = float(started)
        self.since = since  # where this start begins in train_log.jsonl and engine.out.log
        self.memory = memory if memory is not None else MemoryWatch.start(pid)
        self.sent: str | None = None  # the last signal sent to its group
        self.who = "engine"  # or "command": a preset's own training command
        self.untied = ""  # why its pid is not the run's own (attempts.reattach_registered)
        # its process group's members, left running once it is gone (the last poll's)
        self.orphans: tuple[pgroup.GroupMember, ...] = ()
        self._orphaned = False  # its group was seen living on without it
        self._exit: ExitInfo | None = None

    @classmethod
    def start(
        cls,
        argv: list[str],
        folder: RunFolder,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> EngineProcess:
        """Start the engine (or a user's command) in its own session.

        Its stdout+stderr are appended to engine.out.log. `env` (default: this one's) and `cwd`
        (default: this one's) are as the argv's maker says (core/launch/makers.py)."""
        run_env = dict(os.environ if env is None else env)
        run_env.setdefault("PYTHONUNBUFFERED", "1")
        try:
            log_size = folder.log.stat().st_size
        except FileNotFoundError:
            log_size = 0
        # never through a link planted in the folder: the output would land where it points
        fd = open_own(folder.engine_out, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        with os.fdopen(fd, "ab") as out:
            since = (log_size, out.seek(0, os.SEEK_END))
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=child_env(run_env),  # no webhook token
                cwd=cwd,
                close_fds=True,
            )
        return cls(folder, popen.pid, popen, process_started(popen.pid, zombie_ok=True), since)

    @classmethod
    def reattach(
        cls,
        folder: RunFolder,
        pid: int,
        started: float | None = None,
        since: tuple[int, int] = (0, 0),
        memory: MemoryWatch | None = None,
    ) -> EngineProcess:
        """A run started by an earlier console.

        Its exit codes are then unknown and the log says how it ended (a launched [command]'s are
        noted: core/exitnote.py). `since` and `memory` from its attempt (attempts.py) judge it from
        its own start."""
        found = cls(folder, pid, None, started, since, memory)
        found.who = launched_who(folder)
        return found

    def close(self) -> None:
        """Release nothing: the process is read only when polled."""

    def watch(self) -> None:
        """Nothing to start: the process is read when polled."""

    def elsewhere(self) -> str:
        return ""  # its processes are on this host

    def release(self, registry: object | None) -> None:
        self.close()  # the owner that launched it records its end

    def poll(self) -> ExitInfo | None:
        """None while running; the exit, once, then the same answer.

        It runs while its process does, and while its process group lives on without it
        (`orphans`), unless its exit note says the command ended."""
        if self._exit is not None:
            return self._exit
        self.orphans = ()
        rc, alive = self._reaped()
        if alive:
            self.memory.refresh()  # a wrapper may have moved it into another cgroup
            return None
        noted = exitnote.read(self.folder.root, self.pid) if self.who == "command" else None
        if noted is None and self._group_left():
            return None
        self._record_exit(self._exit_code(rc, noted))
        return self._exit

    def _reaped(self) -> tuple[int | None, bool]:
        """(its exit code where it is our child and reaped, whether it still runs)."""
        if self._popen is not None:
            rc = self._popen.poll()
            return rc, rc is None
        return None, self._leads_its_group()

    def _exit_code(self, rc: int | None, noted: tuple[int | None, str | None] | None) -> int | None:
        """Its exit code, negative for a signal: ours where we reaped it, else its exit note's.

        An exit-noting parent orphaned by its command: the parent's end is not the command's,
        which the signal we sent ended, if any."""
        if rc is None and noted is not None:  # not our child: its exit was noted
            code, sig = noted
            return code if code is not None else -_signum(sig)
        if self._orphaned and self.who == "command":
            return -_signum(self.sent) if self.sent is not None else None
        return rc

    def _record_exit(self, rc: int | None) -> None:
        """Judge the exit (`exits.exit_info`) and keep it as the answer of every later poll.

        A [command]'s steps are in its own trainer's log, and a `stop` another process asked
        for is said so. A crash the trainer printed before the stop was asked (its stop line's
        `out_at`) stays the cause: the stop only ended what hung after it."""
        self._exit = exit_info(
            self.folder, rc, self.since, self.memory.evidence(), self.sent, self.who
        )
        if self.who == "command":  # its steps are in its own trainer's log, not ours
            self._exit = replace(
                self._exit, last_step=max(self._exit.last_step, command_step(self.folder))
            )
        stop = self._stop_line()
        if stop is None:
            return
        if self.sent is None:  # a `stop` from another process
            self._exit = stop_asked_of(self._exit)
        out_at = stop.get("out_at")  # an older stop line has none: judged without it
        if isinstance(out_at, int) and not isinstance(out_at, bool):
            crash = crash_before(self.folder, self.since[1], out_at)
            self._exit = replace(self._exit, crash=crash)

    def _stop_line(self) -> dict[str, object] | None:
        """The user's stop recorded for this process's attempt (attempts.jsonl), if any."""
        from fontaine_tui.core.run import attempts  # it reads pids with this module's

        return attempts.stop_line_for(self.folder, self.pid, self.started)

    def wait(self, timeout: float | None = None, interval: float = 0.1) -> ExitInfo | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (info := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(interval)
        return info

    def refusal(self) -> str | None:
        """Why this engine's pid is never signalled, or None.

        A pid found again (not our child) is signalled only with its recorded start time: without
        one, the process that holds the pid now may be anyone's. And only where the run's own
        attempt records it (`untied` says why not)."""
        if self.untied:
            return self.untied
        if self._popen is None and self.started is None:
            return (
                f"engine pid {self.pid}: no start time recorded for it (pid_started missing "
                "or 0), so the process holding that pid now may not be the engine; not "
                "signalled (stop it by hand if it is yours)"
            )
        if self.orphans and (why := pgroup.untied(self.pid, self.started, self.orphans)):
            return (
                f"{process_label(self)} is gone and its process group lives on "
                f"({pgroup.pids_text(self.orphans)}), but {why}; not signalled (stop it by "
                "hand if it is yours)"
            )
        return None

    def signal_group(self, sig: int) -> bool:
        """Send `sig` to the engine's process group (torchrun and its ranks, loader workers).

        A group that lives on without the engine is signalled where its members are the run's
        (`refusal`)."""
        if self.poll() is not None or self.refusal() is not None:
            return False
        if not self.orphans and not self._leads_its_group():
            return False  # gone, or its pid is another process's now
        try:
            os.killpg(self.pid, sig)  # its own session: the group id is its pid
        except ProcessLookupError:
            return False
        self.sent = signal.Signals(sig).name
        return True

    def _leads_its_group(self) -> bool:
        """Whether the group `pid` names is still the engine's.

        Its leader must be the process we started or registered (same start time when known),
        leading its own group, and never init's or this program's own group. So a pid reused by
        another process, or a registry entry edited by hand, never turns a stop into a kill of
        someone else's processes."""
        if self.pid <= 1:
            return False
        try:
            if os.getpgid(self.pid) != self.pid or self.pid == os.getpgrp():
                return False
        except ProcessLookupError:
            return False
        if self._popen is not None:  # our child, not yet reaped: its pid cannot be reused
            return True
        return pid_alive(self.pid, self.started)  # a zombie is gone

    def _group_left(self) -> bool:
        """Whether the process group the engine made lives on without it (`orphans` set).

        Whether its members are the run's is `refusal`'s to say."""
        self.orphans = pgroup.left_without(self.pid)
        self._orphaned = self._orphaned or bool(self.orphans)
        return bool(self.orphans)

    def stop(self, grace_int: float = 60.0, grace_term: float = 30.0) -> ExitInfo:
        """Stop the engine: SIGINT (it checkpoints and exits), then SIGTERM, then SIGKILL.

        Raises InputError (nothing sent) for a pid without its recorded start time (`refusal`)."""
        if self.poll() is None and (why := self.refusal()) is not None:
            raise InputError(why)
        for sig, grace in ((signal.SIGINT, grace_int), (signal.SIGTERM, grace_term)):
            self.signal_group(sig)
            info = self.wait(grace)
            if info is not None:
                return info
        self.signal_group(signal.SIGKILL)
        info = self.wait(10.0)
        if info is None:  # pragma: no cover - a process that survives SIGKILL (D state)
            raise RuntimeError(f"engine pid {self.pid} survived SIGKILL")
        return info
