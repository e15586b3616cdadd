"""A run folder's attempts: each launch and each resume of its engine, and why each ended.

attempts.jsonl is written by this program only, one JSON object a line, appended and never
rewritten: a "begin" line when an engine starts (its pid, where its output starts in the
log and engine.out.log, and the OOM killer's counters then) and an "end" line when its exit
is seen, with the cause (`exits.cause_of`: finished, stopped, crashed, killed,
oom-killed, host-oom, cuda-oom, nan) and what says so. The begin line keeps the counters so
that a console that reattaches later still judges a SIGKILL against the attempt's start.
A torn last line (a console killed mid-write) is skipped when read and ended with a newline
before the next line is appended.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fontaine_tui.core.atomic import open_own
from fontaine_tui.core.host import pgroup
from fontaine_tui.core.host.oomkill import MemoryEvidence, MemoryWatch
from fontaine_tui.core.host.pids import pid_alive
from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.run.exits import CAUSES, ExitInfo, cause_of, shown_detail
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict.prereg import utc_iso

__all__ = [
    "CAUSES",
    "KINDS",
    "Attempt",
    "begin",
    "cause_of",
    "end",
    "attempts_from",
    "open_attempt",
    "read_attempts",
    "stop_asked",
    "stop_asked_for",
    "stop_last",
    "stopping",
]

KINDS = ("launch", "resume")


@dataclass(frozen=True, slots=True)
class Attempt:
    """A begin line and, once the exit was seen, its end line."""

    number: int
    kind: str  # "launch" | "resume"
    pid: int
    pid_started: float | None
    host: str
    began_at: str  # ISO UTC
    log_offset: int  # where this attempt starts in train_log.jsonl
    out_offset: int  # ... and in engine.out.log
    cgroup: Mapping[str, object] | None  # {path, version, oom_kill_at_start}
    vmstat_oom_kill_at_start: int | None
    cause: str  # one of exits.CAUSES; "running" or "unknown" without an end line
    detail: str
    last_step: int | None = None
    checkpoint_step: int | None = None
    exit_code: int | None = None
    signal: str | None = None
    ended_at: str | None = None
    memory: MemoryEvidence | None = None
    job: str = ""  # the Slurm job id of an attempt submitted to Slurm (its pid is 0)
    # a restart under the preset's [recovery]: (k, of N, the cause that made it), else None
    restart: tuple[int, int, str] | None = None

    @property
    def ended(self) -> bool:
        return self.ended_at is not None

    @property
    def since(self) -> tuple[int, int]:
        return self.log_offset, self.out_offset

    def exit_info(self, who: str = "engine") -> ExitInfo:
        """The exit its end line records, its cause as recorded there (not judged again).

        A `stop` of a run already ended says it so, and keeps it."""
        judged = (self.cause, self.detail) if self.cause in CAUSES else None
        return ExitInfo(
            self.exit_code,
            self.signal,
            False,
            self.last_step or 0,
            self.checkpoint_step,
            "",
            self.detail,
            output=self.detail,
            memory=self.memory,
            who=who,
            judged=judged,
        )

    def baseline(self) -> dict[str, object]:
        """The OOM killer's counters at its start, in MemoryWatch.restore's form."""
        return {"cgroup": self.cgroup, "vmstat_oom_kill_at_start": self.vmstat_oom_kill_at_start}

    def describe(self, metrics: Sequence[str] = (), blinded: bool = False) -> str:
        """The attempt in words; `blinded`: its exit's words shown as `exits.shown_detail` says."""
        detail = shown_detail(self.cause, self.detail, metrics, blinded)
        step = "" if self.last_step is None else f" at step {self.last_step}"
        code = "" if self.exit_code is None else f", exit {self.exit_code}"
        sig = "" if self.signal is None else f", {self.signal}"
        what = f"slurm job {self.job}" if self.job else f"pid {self.pid}"
        kind = self.kind
        if self.restart is not None:
            kind += f", restart {self.restart[0]} of {self.restart[1]} after {self.restart[2]}"
        return (
            f"attempt {self.number} ({kind}, {what}, {self.began_at}): "
            f"{self.cause}{step}{code}{sig}" + (f": {literal(detail)}" if detail else "")
        )


class Begun(Protocol):
    """A process just started (or a Slurm job just submitted), as its begin line records it."""

    pid: int
    started: float | None
    since: tuple[int, int]  # where it starts in train_log.jsonl and engine.out.log
    memory: MemoryWatch  # its OOM-kill counters at its start
    job: str  # its Slurm job id, "" for a process


def begin(
    folder: RunFolder,
    kind: str,
    engine: Begun,
    host: str | None = None,
    clock: Callable[[], float] = time.time,
    restart: tuple[int, int, str] | None = None,
) -> int:
    """Record that `engine` is attempt N of the run, and return N.

    The engine is just started, or resumed, or a Slurm job just submitted. A resume made by
    the preset's [recovery] says so: `restart` is (k, of N, the cause)."""
    if kind not in KINDS:
        raise ValueError(f"attempt kind {kind!r}: expected one of {', '.join(KINDS)}")

    def line(records: list[dict[str, Any]]) -> dict[str, Any]:
        numbers = [r["attempt"] for r in records if r["event"] == "begin"]
        base = engine.memory.baseline()
        rec: dict[str, Any] = {
            "event": "begin",
            "attempt": max(numbers, default=0) + 1,
            "kind": kind,
            "pid": engine.pid,
            "pid_started": engine.started,
            "host": host or socket.gethostname(),
            "at": utc_iso(clock()),
            "log_offset": engine.since[0],
            "out_offset": engine.since[1],
            "cgroup": base["cgroup"],
            "vmstat_oom_kill_at_start": base["vmstat_oom_kill_at_start"],
        }
        if engine.job:
            rec["job"] = engine.job
        if restart is not None:
            rec["restart"], rec["of"], rec["cause"] = restart
        return rec

    rec = _append(folder, line)
    assert rec is not None
    return int(rec["attempt"])


def end(
    folder: RunFolder, attempt: int, info: ExitInfo, clock: Callable[[], float] = time.time
) -> bool:
    """Record how attempt `attempt` ended.

    Returns False (nothing written) when an end line for it is already there (two consoles saw
    the same exit)."""
    cause, detail = cause_of(info)

    def line(records: list[dict[str, Any]]) -> dict[str, Any] | None:
        if any(r["event"] == "end" and r["attempt"] == attempt for r in records):
            return None
        return {
            "event": "end",
            "attempt": attempt,
            "cause": cause,
            "detail": detail,
            "status": info.status,
            "last_step": info.last_step,
            "checkpoint_step": info.checkpoint_step,
            "exit_code": info.code,
            "signal": info.signal,
            "at": utc_iso(clock()),
            "memory": None if info.memory is None else info.memory.as_dict(),
        }

    return _append(folder, line) is not None


def read_attempts(
    folder: RunFolder,
    host: str | None = None,
    alive: Callable[[int, float | None], bool] | None = None,
) -> list[Attempt]:
    """The attempts in the order they began.

    One without an end line is "running" while its pid (on this host) is alive, else "unknown".
    `alive` (pid, start) says so; by default the pid's process, or the process group it made
    left running without it (core/host/pgroup.py)."""
    try:
        data = read_whole(folder.attempts)
    except OSError:
        return []
    return attempts_from(data, host, alive)


def attempts_from(
    data: bytes,
    host: str | None = None,
    alive: Callable[[int, float | None], bool] | None = None,
) -> list[Attempt]:
    """`read_attempts` of attempts.jsonl's bytes (read here, or sent by another host)."""
    records = _records(data)
    ends = {r["attempt"]: r for r in records if r["event"] == "end"}
    begins = [r for r in records if r["event"] == "begin"]
    here = host or socket.gethostname()
    out = []
    for i, b in enumerate(begins):
        e = ends.get(b["attempt"])
        if e is not None:
            state = str(e.get("cause", "")), str(e.get("detail", ""))
        else:
            state = _open_state(b, i + 1 < len(begins), here, alive)
        out.append(_attempt(b, e, *state))
    return out


def _open_state(
    b: Mapping[str, Any],
    later: bool,
    here: str,
    alive: Callable[[int, float | None], bool] | None,
) -> tuple[str, str]:
    """The cause and detail of an attempt without an end line, from what is known of it.

    `later`: another attempt began after it; `here`: this host's name; `alive` as in
    `read_attempts`."""
    started = _num(b.get("pid_started"))
    pid = _int(b.get("pid")) or 0
    if later:
        return "unknown", "no end recorded; a later attempt began"
    if isinstance(b.get("job"), str) and b["job"]:
        return (
            "running",
            f"slurm job {b['job']}: no end recorded yet (`fontaine-tui runs` asks the scheduler)",
        )
    if str(b.get("host", "")) != here:
        return "unknown", f"no end recorded; pid {pid} on {b.get('host')} is not checked from here"
    if (alive or pid_alive)(pid, started):
        return "running", f"pid {pid} alive"
    if alive is None and (left := pgroup.runs_on(pid, started)):
        return (
            "running",
            f"pid {pid} is gone, but its process group lives on ({pgroup.pids_text(left)})",
        )
    return "unknown", f"no end recorded: pid {pid} is gone (no console saw its exit)"


def _attempt(b: Mapping[str, Any], e: Mapping[str, Any] | None, cause: str, detail: str) -> Attempt:
    """The Attempt of begin line `b` and end line `e` (None while none is recorded)."""
    cg = b.get("cgroup")
    return Attempt(
        b["attempt"],
        str(b.get("kind", "")),
        _int(b.get("pid")) or 0,
        _num(b.get("pid_started")),
        str(b.get("host", "")),
        str(b.get("at", "")),
        _int(b.get("log_offset")) or 0,
        _int(b.get("out_offset")) or 0,
        cg if isinstance(cg, dict) else None,
        _int(b.get("vmstat_oom_kill_at_start")),
        cause,
        detail,
        *_end_fields(e),
        job=str(b["job"]) if isinstance(b.get("job"), str) else "",
        restart=_restart(b),
    )


def _end_fields(
    e: Mapping[str, Any] | None,
) -> tuple[int | None, int | None, int | None, str | None, str | None, MemoryEvidence | None]:
    """What an end line records: last step, checkpoint step, exit code, signal, when, memory.

    All None while no end line is recorded."""
    if not e:
        return None, None, None, None, None, None
    signal, mem = e.get("signal"), e.get("memory")
    return (
        _int(e.get("last_step")),
        _int(e.get("checkpoint_step")),
        _int(e.get("exit_code")),
        str(signal) if isinstance(signal, str) else None,
        str(e.get("at", "")),
        MemoryEvidence.from_dict(mem) if isinstance(mem, dict) else None,
    )


def _restart(b: Mapping[str, Any]) -> tuple[int, int, str] | None:
    k, n, cause = _int(b.get("restart")), _int(b.get("of")), b.get("cause")
    return (k, n, cause) if k and n and isinstance(cause, str) else None


def stopping(folder: RunFolder, attempt: int, clock: Callable[[], float] = time.time) -> None:
    """Record that a user's stop is on its way to attempt `attempt`, before its signals.

    A watcher that sees the exit first then knows it for a stop: [recovery] never restarts it.
    `out_at`: engine.out.log's size then, so that what the trainer printed before the stop (a
    crash it hangs after) is told from what it printed taking it (`exits.crash_before`).
    """
    try:
        out_at: int | None = os.stat(folder.engine_out).st_size
    except OSError:
        out_at = None
    _append(
        folder,
        lambda records: {
            "event": "stop",
            "attempt": attempt,
            "at": utc_iso(clock()),
            **({} if out_at is None else {"out_at": out_at}),
        },
    )


def stop_last(folder: RunFolder, clock: Callable[[], float] = time.time) -> int | None:
    """Record a user's stop for the run's last attempt, ended or not; its number.

    A stop that finds the run's process gone records it so: a restart [recovery] would make
    after that attempt, waiting its backoff, is not made. None: nothing written (no attempt,
    or a stop already recorded for the last one: one is enough)."""

    def line(records: list[dict[str, Any]]) -> dict[str, Any] | None:
        numbers = [r["attempt"] for r in records if r["event"] == "begin"]
        if not numbers:
            return None
        last = max(numbers)
        if any(r["event"] == "stop" and r["attempt"] == last for r in records):
            return None
        return {"event": "stop", "attempt": last, "at": utc_iso(clock())}

    rec = _append(folder, line)
    return None if rec is None else int(rec["attempt"])


def stop_asked(folder: RunFolder, attempt: int) -> bool:
    """Whether a user's stop was recorded for attempt `attempt` (`stopping`)."""
    try:
        data = read_whole(folder.attempts)
    except OSError:
        return False
    return any(r["event"] == "stop" and r["attempt"] == attempt for r in _records(data))


def stop_asked_for(folder: RunFolder, pid: int, started: float | None) -> bool:
    """Whether a user's stop was recorded for the attempt that began process `pid`.

    The attempt is the last whose begin line records that pid and start time."""
    return stop_line_for(folder, pid, started) is not None


def stop_line_for(folder: RunFolder, pid: int, started: float | None) -> dict[str, Any] | None:
    """The stop line recorded for the attempt that began process `pid` (`stop_asked_for`)."""
    try:
        records = _records(read_whole(folder.attempts))
    except OSError:
        return None
    begun = [
        r["attempt"]
        for r in records
        if r["event"] == "begin" and r.get("pid") == pid and _num(r.get("pid_started")) == started
    ]
    stops = [r for r in records if begun and r["event"] == "stop" and r["attempt"] == begun[-1]]
    return stops[0] if stops else None


def open_attempt(folder: RunFolder) -> Attempt | None:
    """The last attempt when no end line closes it (a console reattaching ends that one)."""
    attempts = read_attempts(folder, alive=lambda pid, started: True)
    return attempts[-1] if attempts and not attempts[-1].ended else None


# -- the file --------------------------------------------------------------------------------


def _append(
    folder: RunFolder, make: Callable[[list[dict[str, Any]]], dict[str, Any] | None]
) -> dict[str, Any] | None:
    """Under an exclusive lock on the file: read it, and append make(records) unless None."""
    # never through a link planted in the folder: it would write where it points
    fd = open_own(folder.attempts, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        data = read_whole(folder.attempts)
        rec = make(_records(data))
        if rec is None:
            return None
        line = json.dumps(rec, allow_nan=False, separators=(",", ":"), default=str) + "\n"
        if data and not data.endswith(b"\n"):
            line = "\n" + line  # a torn line stays as it is, ended, and is skipped
        os.write(fd, line.encode())
        return rec
    finally:
        os.close(fd)  # and the lock with it


def _records(data: bytes) -> list[dict[str, Any]]:
    out = []
    for raw in data.split(b"\n"):
        try:
            rec = json_loads(raw)
        except ValueError:
            continue
        if (
            isinstance(rec, dict)
            and rec.get("event") in ("begin", "end", "stop")
            and isinstance(rec.get("attempt"), int)
        ):
            out.append(rec)
    return out


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _num(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
