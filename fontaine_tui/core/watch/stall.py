"""The stall diagnosis: one line saying why the log has gone quiet past the stall limit.

It says what is most likely happening and where to look, not a bare "no record for N s".

Silence alone cannot tell a hang from a long step; read with what the host says at the same
moment it usually can: the engine process tree's states (psutil: D state, zombie, stopped),
the GPU's utilisation, the tree's CPU and the host RAM trend. Pure: the WarningBook
(alert_book.py) keeps the short histories (RAM readings, process states) and hands them in
through RunContext; nothing here samples.

Precedence: the first case that holds is the headline; the others' readings follow it
("seen: ..."), and their numbers are all in the warning's numbers.

 1. gone        the engine's pid no longer exists, yet no exit was seen
 2. zombie      the engine exited and nothing has reaped it
 3. stopped     SIGSTOP / Ctrl-Z (or a tracer) holds a member of the tree: `kill -CONT`
 4. disk-sleep  a member in D state (uninterruptible I/O): blocked on a filesystem
 5. dead-child  a worker or rank in the tree is a zombie: the rest waits on it
 6. ram-out     host RAM runs out within RAM_OUT_MIN minutes at its least-squares trend
 7. gpu-busy    GPU util at or over GPU_IDLE_PCT: a long step, probe or checkpoint
 8. hang        the GPU idle (or a CPU run) and the engine not busy on the CPU
 9. cpu-busy    the engine tree busy on the CPU
10. blind       a GPU run with no GPU telemetry, the engine not busy: said so, no guess
11. unsampled   no process telemetry (a remote run): what the GPU says, if anything

Why this order: a process that is gone, dead or stopped cannot progress whatever else reads,
so that is the answer; a D state names what it waits on; a dead worker explains a sleeping
parent. A RAM forecast is rarely what keeps the log quiet, but under RAM_OUT_MIN it is what
to act on first. Then the GPU: work on it is evidence of progress, an idle GPU with a
sleeping engine the classic hang. CPU comes after the GPU because a CUDA sync spins a core
while the GPU works. On a CPU run (no GPUs held) the GPU says nothing and is not read.

A run another trainer writes, not launched from here (`engine` False), has no process of
ours to sample nor an engine.out.log: its headline is the host's RAM forecast, a busy GPU,
or what cannot be known from here, and points at the trainer's own output.

Severity: "alert" when the engine is gone or a zombie, or RAM runs out within RAM_OUT_MIN
(whatever the headline); "warn" otherwise.

Its size: one concept over some 700 lines, a stall's diagnosis. The scene read from one
look, the ordered tables of cases (`_ENGINE`, `_FOREIGN`) over it and each case's words change
together (a case's test reads what the scene holds, in the precedence this docstring lists),
so they are kept in one module.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from fontaine_tui.core.host.telemetry import ProcessSample, TelemetrySnapshot
from fontaine_tui.core.log.records import Checkpoint, Event
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import gate_of
from fontaine_tui.core.runfolder import ENGINE_OUT
from fontaine_tui.core.text import GIB, MIB, gib

HISTORY = 12  # snapshots a WarningBook keeps: about a minute at the console's 5 s telemetry
GPU_IDLE_PCT = 5.0  # mean GPU util under this is idle
CPU_BUSY_PCT = 50.0  # the tree's CPU, percent of one core, at or over this is busy
RAM_OUT_MIN = 10.0  # RAM running out within this many minutes: the headline, and an alert
RAM_MIN_READINGS, RAM_MIN_SPAN_S = 3, 20.0  # fewer or shorter: no trend is said
RAM_STEADY = 16 * MIB  # bytes per minute either way that read as steady
STOPPED = ("stopped", "tracing-stop")
DISK, ZOMBIE = "disk-sleep", "zombie"

RamReading = tuple[float, int, int]  # (time, available, total)
StateReading = tuple[float, str]  # (time, state_key)


@dataclass(frozen=True, slots=True)
class Silence:
    """How long the log has been quiet, against the limit it was judged on."""

    quiet_s: float
    limit_s: float
    median_s: float  # the median interval between recent train records
    factor: float
    floor_s: float
    last_step: int
    due: str = ""  # what the engine writes after last_step: "eval", "checkpoint" or ""
    eval_every: int = 0
    save_every: int = 0

    def due_text(self) -> str:
        if self.due == "eval":
            return f"the eval probe at step {self.last_step} (eval_every {self.eval_every})"
        if self.due == "checkpoint":
            return f"the checkpoint at step {self.last_step} (save_every {self.save_every})"
        return ""


def silence(
    store: RunStore,
    gates: Mapping[str, object],
    now: float,
    eval_every: int = 0,
    save_every: int = 0,
    steps: int = 0,
) -> Silence | None:
    """The silence, when it is past stall_factor x the median record interval, else None.

    The limit is at least stall_min_s. Any record counts as a sign of life: a long eval probe or
    a checkpoint is not a stall."""
    times = store.columns["time"]
    if len(times) < 2:
        return None
    recent = list(times[-50:])
    gaps = [b - a for a, b in zip(recent, recent[1:], strict=False) if b >= a]
    if not gaps:
        return None
    factor = gate_of(gates, "stall_factor") or 3.0
    floor = gate_of(gates, "stall_min_s") or 0.0
    median = statistics.median(gaps)
    limit = max(factor * median, floor)
    quiet = now - _last_sign_of_life(store)
    if quiet <= limit:
        return None
    last = store.steps[-1]
    due = _due(store, last, eval_every, save_every, steps)
    return Silence(quiet, limit, median, factor, floor, last, due, eval_every, save_every)


def _last_sign_of_life(store: RunStore) -> float:
    """When the run last wrote anything: a train record, a checkpoint, an event or a probe."""
    others: list[Checkpoint | Event] = [*store.checkpoints[-1:], *store.events[-1:]]
    probe = store.last_probe_step()
    seen = [store.columns["time"][-1], *(r.time for r in others)]
    if probe is not None:
        seen.append(store.probe_time(probe))
    return max(t for t in seen if math.isfinite(t))


def _due(store: RunStore, last: int, eval_every: int, save_every: int, steps: int) -> str:
    """What the engine writes after step `last` and has not yet: "eval", "checkpoint" or "".

    The engine writes a step's train record, then its probe, then saves; the run's last step
    (`steps`) is probed and saved whatever the cadence."""
    end = steps > 0 and last >= steps
    if _on_cadence(last, eval_every, end) and not store.has_probe(last):
        return "eval"
    if _on_cadence(last, save_every, end) and not any(
        c.step == last for c in store.checkpoints[-3:]
    ):
        return "checkpoint"
    return ""


def _on_cadence(step: int, every: int, end: bool) -> bool:
    """Whether a cadence of `every` steps (0: none) falls on `step`, or the run ends there."""
    return every > 0 and (step % every == 0 or end)


@dataclass(frozen=True, slots=True)
class RamTrend:
    rate: float  # bytes per minute, least squares over the readings; negative when falling
    available: int  # the latest reading
    total: int
    readings: int

    @property
    def minutes_to_oom(self) -> float | None:
        """Minutes until available reaches 0 at this rate; None unless it is falling."""
        return max(0, self.available) / -self.rate if self.rate < -RAM_STEADY else None

    def text(self) -> str:
        if abs(self.rate) < RAM_STEADY:
            return "steady"
        rate = abs(self.rate)
        size = gib(rate) if rate >= GIB / 10 else f"{rate / MIB:.0f} MiB"
        return f"{'falling' if self.rate < 0 else 'rising'} {size}/min"


def ram_trend(history: Sequence[RamReading]) -> RamTrend | None:
    """The least-squares slope of available RAM over time.

    None with fewer than RAM_MIN_READINGS readings or a span under RAM_MIN_SPAN_S."""
    if len(history) < RAM_MIN_READINGS:
        return None
    ts = [t for t, _, _ in history]
    span = max(ts) - min(ts)
    if span < RAM_MIN_SPAN_S:
        return None
    t_mean = sum(ts) / len(ts)
    a_mean = sum(a for _, a, _ in history) / len(history)
    slope = sum((t - t_mean) * (a - a_mean) for t, a, _ in history) / sum(
        (t - t_mean) ** 2 for t in ts
    )
    _, available, total = history[-1]
    return RamTrend(slope * 60.0, available, total, len(history))


def state_key(t: TelemetrySnapshot | None) -> str:
    """The process part of the diagnosis at one snapshot, as a WarningBook records it."""
    if t is not None and t.process_gone:
        return "gone"
    p = t.process if t is not None else None
    if p is None:
        return "unsampled"
    if p.state == ZOMBIE:
        return ZOMBIE
    if p.pids_in(*STOPPED):
        return "stopped"
    if p.pids_in(DISK):
        return DISK
    if p.pids_in(ZOMBIE):
        return "dead-child"
    return p.state or "unknown"


def polls(history: Sequence[StateReading], key: str, at: float) -> int:
    """The count of consecutive polls up to the one at `at` that read `key`.

    The poll at `at` is counted whether or not it is in the history."""
    n = 1
    for t, k in reversed(history):
        if t >= at:
            continue
        if k != key:
            break
        n += 1
    return n


@dataclass(frozen=True, slots=True)
class Diagnosis:
    cause: str  # the case of the precedence list that made the headline
    severity: str
    message: str
    numbers: dict[str, float]


def _for(n: int) -> str:
    return f"for the last {n} polls" if n > 1 else "at the last poll"


def _who(p: ProcessSample, pids: tuple[int, ...]) -> str:
    if p.pid in pids:
        return f"engine pid {p.pid}"
    return f"pid {', '.join(map(str, pids))} of the engine tree"


def _cpu(p: ProcessSample) -> str:
    return "CPU not measured yet" if p.cpu_pct is None else f"CPU {p.cpu_pct:.0f} %"


def _no_gpu(t: TelemetrySnapshot | None) -> str:
    """Why there is no GPU util to read."""
    return "no telemetry" if t is None else t.gpu_status or "GPU util not reported"


def _headline(
    q: Silence,
    t: TelemetrySnapshot | None,
    key: str,
    n: int,
    trend: RamTrend | None,
    gpus_used: int,
    engine: bool = True,
) -> tuple[str, str]:
    """The (cause, headline) of the first case in the precedence that holds (the module's list).

    A run another trainer writes (`engine` False) has cases of its own (`_FOREIGN`)."""
    scene = _Scene.of(q, t, key, n, trend, gpus_used)
    for holds, cause, words in _ENGINE if engine else _FOREIGN:
        if holds(scene):
            return cause, words(scene)
    raise AssertionError("the last case always holds")  # pragma: no cover


@dataclass(frozen=True, slots=True)
class _Scene:
    """What a stall's headline is told from: the silence and the host at the same moment."""

    q: Silence
    t: TelemetrySnapshot | None
    key: str  # the process part (state_key)
    n: int  # the polls in a row that read `key`
    trend: RamTrend | None
    gpus_used: int
    p: ProcessSample | None  # the engine's process tree, where sampled
    util: float | None  # the GPUs' mean utilisation, unless a CPU run or not reported
    oom: float | None  # minutes until host RAM runs out at its trend

    @classmethod
    def of(
        cls,
        q: Silence,
        t: TelemetrySnapshot | None,
        key: str,
        n: int,
        trend: RamTrend | None,
        gpus_used: int,
    ) -> _Scene:
        p = t.process if t is not None else None
        util = t.gpu_util() if t is not None and gpus_used > 0 else None
        oom = trend.minutes_to_oom if trend is not None else None
        return cls(q, t, key, n, trend, gpus_used, p, util, oom)

    @property
    def proc(self) -> ProcessSample:
        """The engine's process, for the cases that hold only with one sampled."""
        assert self.p is not None
        return self.p

    @property
    def pid(self) -> int | None:
        """The engine's pid: its sampled process's, else the one asked about."""
        t, p = self.t, self.p
        return p.pid if p is not None else (t.engine_pid if t is not None else None)

    @property
    def dump(self) -> str:
        """The py-spy line that shows where the engine waits."""
        pid = self.pid
        return f"`py-spy dump --pid {pid}`" if pid is not None else "`py-spy dump` the engine"

    @property
    def busy(self) -> bool:
        """The engine tree busy on the CPU (or running, before its CPU is measured)."""
        p = self.proc
        return p.cpu_pct >= CPU_BUSY_PCT if p.cpu_pct is not None else p.state == "running"

    @property
    def cpu_run(self) -> bool:
        return self.gpus_used <= 0

    @property
    def ram_out(self) -> bool:
        return self.oom is not None and self.oom <= RAM_OUT_MIN

    @property
    def gpu_busy(self) -> bool:
        return self.util is not None and self.util >= GPU_IDLE_PCT

    def ram_words(self) -> str:
        """Host RAM running out: its trend, what is free and when it runs out."""
        trend, oom = self.trend, self.oom
        assert trend is not None and oom is not None
        when = "under a minute" if oom < 1 else f"~{oom:.0f} min"
        return (
            f"host RAM {trend.text()}, {gib(trend.available)} free: out of memory in {when} at "
            "this rate"
        )


def _in(key: str) -> Callable[[_Scene], bool]:
    """The case of a process state: the engine's process sampled and reading `key`."""
    return lambda r: r.p is not None and r.key == key


def _gone(r: _Scene) -> str:
    return (
        f"engine pid {r.pid} is gone and no exit was "
        f"seen: it died outside the console (the OOM killer, a scheduler, `kill -9`) — look "
        f"at the end of {ENGINE_OUT} and `dmesg`"
    )


def _zombie(r: _Scene) -> str:
    return (
        f"engine pid {r.proc.pid} is a zombie (exited, not reaped): the trainer is "
        f"dead — look at the end of {ENGINE_OUT} for its last error"
    )


def _sigstopped(r: _Scene) -> bool:
    return _in("stopped")(r) and bool(r.proc.pids_in("stopped"))


def _stopped(r: _Scene) -> str:
    pids = r.proc.pids_in(*STOPPED)
    return (
        f"{_who(r.proc, pids)} stopped (SIGSTOP / Ctrl-Z) {_for(r.n)}: nothing runs "
        f"until it is continued — `kill -CONT {' '.join(map(str, pids))}`"
    )


def _traced(r: _Scene) -> str:
    return (
        f"{_who(r.proc, r.proc.pids_in(*STOPPED))} held by a tracer (tracing-stop: gdb, "
        f"strace, py-spy) {_for(r.n)}: nothing runs until it lets go — detach the tracer"
    )


def _disk(r: _Scene) -> str:
    line = (
        f"{_who(r.proc, r.proc.pids_in(DISK))} in D state (uninterruptible I/O) {_for(r.n)}: "
        f"likely blocked on the filesystem — look at the data_dir / output_dir mount "
        f"(NFS, a full or slow disk)"
    )
    return line + (f"; {r.q.due_text()} is next" if r.q.due == "checkpoint" else "")


def _dead_child(r: _Scene) -> str:
    return (
        f"{_who(r.proc, r.proc.pids_in(ZOMBIE))} is a zombie {_for(r.n)} (a DataLoader worker "
        f"or a rank exited) and the engine waits on it — look at {ENGINE_OUT} "
        f"for its error; it will not come back: stop the run and resume"
    )


def _ram_out(r: _Scene) -> str:
    p = r.p
    where = (
        f"the engine tree's {p.mem_kind} ({gib(p.mem)}, {p.processes} processes) and "
        f"the host's other processes (`top -o RES`)"
        if p is not None
        else "the host's processes (`top -o RES`)"
    )
    return f"{r.ram_words()} — loader workers' memory or a leak; look at {where}"


def _gpu_busy(r: _Scene) -> str:
    q, util = r.q, r.util
    if q.due == "eval":
        line = f"GPU busy ({util:.0f} %) with no record: likely {q.due_text()}, not a hang — wait"
    else:
        every = f" ({q.eval_every})" if q.eval_every else ""
        line = (
            f"GPU busy ({util:.0f} %) with no record: a long step or eval probe, not a "
            f"hang — wait, or compare with eval_every{every}"
        )
    if r.gpus_used > 1:
        line += (
            f"; on {r.gpus_used} GPUs a hung NCCL collective reads busy too: if it lasts, {r.dump}"
        )
    return line


def _unsampled(r: _Scene) -> bool:
    return r.p is None


def _reason(r: _Scene) -> str:
    """Why the engine process is not sampled."""
    return r.t.process_reason if r.t is not None else "no telemetry"


def _unsampled_idle(r: _Scene) -> str:
    return (
        f"GPU idle ({r.util:.0f} %) and the engine process not sampled ({_reason(r)}): likely "
        f"a hang (NCCL, a DataLoader deadlock) or blocked I/O — "
        f"`py-spy dump` the engine on its host"
    )


def _unsampled_blind(r: _Scene) -> str:
    gpu = "the run is on the CPU" if r.cpu_run else _no_gpu(r.t)
    return (
        f"the engine process is not sampled ({_reason(r)}) and {gpu}: a hang "
        f"cannot be told from a long step — look at the end of "
        f"{ENGINE_OUT}, or `py-spy dump` the engine on its host"
    )


def _busy_cpu(r: _Scene) -> str:
    """The engine's CPU, for a busy engine."""
    cpu = r.proc.cpu_pct
    return f"{cpu:.0f} % of a core" if cpu is not None else "state running, CPU not measured yet"


def _busy_on_cpu_run(r: _Scene) -> str:
    return (
        f"engine busy on the CPU ({_busy_cpu(r)}) on a CPU run: a long step, "
        f"not a hang — wait, or compare with the median interval "
        f"{r.q.median_s:.1f} s"
    )


def _busy_gpu_idle(r: _Scene) -> str:
    return (
        f"engine busy on the CPU ({_busy_cpu(r)}) with the GPU idle "
        f"({r.util:.0f} %): CPU-bound work (data decoding, a CPU "
        f"fallback, a Python loop) or a busy-wait — {r.dump}"
    )


def _busy_blind(r: _Scene) -> str:
    return (
        f"engine busy on the CPU ({_busy_cpu(r)}), {_no_gpu(r.t)}: "
        f"CPU-bound work, a busy-wait, or a CUDA sync spinning on a long "
        f"GPU step — {r.dump}"
    )


def _state(r: _Scene) -> str:
    return r.proc.state or "in an unknown state"


def _hang(r: _Scene) -> str:
    cause = (
        "likely a hung collective (NCCL) or a DataLoader deadlock"
        if r.gpus_used > 1
        else "likely a DataLoader deadlock or a wait on a lock or queue"
    )
    return (
        f"GPU idle ({r.util:.0f} %) and the engine {_state(r)} ({_cpu(r.proc)}): {cause} — {r.dump}"
    )


def _hang_cpu_run(r: _Scene) -> str:
    return (
        f"engine {_state(r)} ({_cpu(r.proc)}) on a CPU run, so not computing: likely a "
        f"DataLoader deadlock or a wait on a peer rank (gloo) — {r.dump}"
    )


def _blind(r: _Scene) -> str:
    return (
        f"engine {_state(r)} ({_cpu(r.proc)}) and {_no_gpu(r.t)}: "
        f"a hang cannot be told from a long GPU step here — {r.dump} shows which"
    )


def _always(r: _Scene) -> bool:
    return True


def _gpu_read(r: _Scene) -> bool:
    """A GPU run whose GPU reports its utilisation."""
    return r.util is not None


_Case = tuple[Callable[[_Scene], bool], str, Callable[[_Scene], str]]
# The precedence of the module's docstring: the first case that holds makes the headline.
# Past the two "unsampled" cases the engine's process is sampled: their words read `proc`.
_ENGINE: tuple[_Case, ...] = (
    (lambda r: r.key == "gone", "gone", _gone),
    (_in(ZOMBIE), ZOMBIE, _zombie),
    (_sigstopped, "stopped", _stopped),
    (_in("stopped"), "stopped", _traced),
    (_in(DISK), DISK, _disk),
    (_in("dead-child"), "dead-child", _dead_child),
    (lambda r: r.ram_out, "ram-out", _ram_out),
    (lambda r: r.gpu_busy, "gpu-busy", _gpu_busy),
    (lambda r: _unsampled(r) and _gpu_read(r), "unsampled", _unsampled_idle),
    (_unsampled, "unsampled", _unsampled_blind),
    (lambda r: r.busy and r.cpu_run, "cpu-busy", _busy_on_cpu_run),
    (lambda r: r.busy and _gpu_read(r), "cpu-busy", _busy_gpu_idle),
    (lambda r: r.busy, "cpu-busy", _busy_blind),
    (_gpu_read, "hang", _hang),
    (lambda r: r.cpu_run, "hang", _hang_cpu_run),
    (_always, "blind", _blind),
)
# A run another trainer writes: no engine process, output file or command of ours to point at;
# the line gives what the host says, and where the trainer's own signs are.
_FOREIGN: tuple[_Case, ...] = (
    (
        lambda r: r.ram_out,
        "ram-out",
        lambda r: f"{r.ram_words()} — look at the host's processes (`top -o RES`)",
    ),
    (
        lambda r: r.gpu_busy,
        "gpu-busy",
        lambda r: (
            f"GPU busy ({r.util:.0f} %) with no record: a long step or eval, "
            f"or another process on the GPU — wait, or look at the "
            f"trainer's own output"
        ),
    ),
    (
        _always,
        "unsampled",
        lambda r: (
            "the trainer is not a process this console launched, so its state "
            "is not sampled: a hang cannot be told from a long step or a run "
            "that stopped without saying so — look at the trainer's own output "
            "or its process on its host"
        ),
    ),
)


def _seen(
    t: TelemetrySnapshot | None,
    key: str,
    n: int,
    trend: RamTrend | None,
    gpus_used: int,
    engine: bool = True,
) -> list[str]:
    """What the host reads beside the headline: the GPU, host RAM and the engine's process."""
    if t is None:
        return ["no telemetry"]
    out = [_gpu_seen(t, gpus_used), _ram_seen(t, trend)]
    if engine:  # else the trainer's process is not ours to sample
        out.append(_engine_seen(t, key, n))
    return out


def _gpu_seen(t: TelemetrySnapshot, gpus_used: int) -> str:
    util = t.gpu_util()
    gpu = f"GPU {util:.0f} %" if util is not None else _no_gpu(t)
    return gpu + (" (not used: a CPU run)" if gpus_used <= 0 and t.gpus else "")


def _ram_seen(t: TelemetrySnapshot, trend: RamTrend | None) -> str:
    if trend is not None:
        return (
            f"host RAM {trend.text()}, {gib(trend.available)} free of "
            f"{gib(trend.total, unit=False)}"
        )
    if t.ram is not None:
        return (
            f"host RAM {gib(t.ram.available)} free of {gib(t.ram.total, unit=False)} (no trend yet)"
        )
    return f"host RAM unknown ({t.ram_reason})"


def _engine_seen(t: TelemetrySnapshot, key: str, n: int) -> str:
    p = t.process
    if p is not None:
        plural = "es" if p.processes != 1 else ""
        return (
            f"engine pid {p.pid} {p.state or 'in an unknown state'} {_for(n)}, "
            f"{p.processes} process{plural}, {_cpu(p)}, {p.mem_kind} {gib(p.mem)}"
        )
    if key == "gone":
        return f"engine pid {t.engine_pid} gone"
    return f"engine process not sampled ({t.process_reason})"


def diagnose(
    q: Silence,
    t: TelemetrySnapshot | None,
    ram_history: Sequence[RamReading] = (),
    state_history: Sequence[StateReading] = (),
    gpus_used: int = 1,
    engine: bool = True,
) -> Diagnosis:
    """One stall line: the silence, the most likely cause and what was seen.

    The cause follows the module's precedence; severity and numbers come with it. `engine` False:
    a run another trainer writes (no engine process, output file or command is named)."""
    key = state_key(t) if engine else "unsampled"
    n = polls(state_history, key, t.time) if t is not None else 1
    trend = ram_trend(ram_history)
    cause, headline = _headline(q, t, key, n, trend, gpus_used, engine)
    numbers = _numbers(q, t, n, trend, engine)
    oom = trend.minutes_to_oom if trend is not None else None
    alert = cause in ("gone", ZOMBIE) or (oom is not None and oom <= RAM_OUT_MIN)
    message = (
        f"stall: no record for {q.quiet_s:.0f} s (limit {q.limit_s:.0f} s = "
        f"max({q.factor:g} x median interval {q.median_s:.1f} s, {q.floor_s:g} s)); "
        f"last step {q.last_step}. {headline}. Seen: "
        f"{'; '.join(_seen(t, key, n, trend, gpus_used, engine))}."
    )
    return Diagnosis(cause, "alert" if alert else "warn", message, numbers)


def _numbers(
    q: Silence, t: TelemetrySnapshot | None, n: int, trend: RamTrend | None, engine: bool
) -> dict[str, float]:
    """The stall warning's numbers: the silence's, then the host's, RAM trend's and engine's."""
    numbers: dict[str, float] = {
        "quiet_s": q.quiet_s,
        "limit_s": q.limit_s,
        "median_interval_s": q.median_s,
        "last_step": float(q.last_step),
        "state_polls": float(n),
    }
    if t is not None:
        numbers.update(_host_numbers(t))
    if trend is not None:
        numbers.update(_trend_numbers(trend))
    if t is not None and engine:
        numbers.update(_engine_numbers(t))
    return numbers


def _host_numbers(t: TelemetrySnapshot) -> dict[str, float]:
    numbers: dict[str, float] = {}
    util = t.gpu_util()
    if util is not None:
        numbers["gpu_util_pct"] = util
    if t.ram is not None:
        numbers["ram_available"] = float(t.ram.available)
        numbers["ram_total"] = float(t.ram.total)
    return numbers


def _trend_numbers(trend: RamTrend) -> dict[str, float]:
    numbers = {"ram_rate_bytes_per_min": trend.rate, "ram_readings": float(trend.readings)}
    oom = trend.minutes_to_oom
    if oom is not None:
        numbers["minutes_to_oom"] = oom
    return numbers


def _engine_numbers(t: TelemetrySnapshot) -> dict[str, float]:
    """The engine's pid, and its tree's processes, memory and CPU where it was sampled."""
    p = t.process
    if p is None:
        return {} if t.engine_pid is None else {"pid": float(t.engine_pid)}
    numbers = {"pid": float(p.pid), "processes": float(p.processes), "mem": float(p.mem)}
    if p.cpu_pct is not None:
        numbers["cpu_pct"] = p.cpu_pct
    return numbers
