"""One look at the machine a run lives on: GPUs, host RAM, the engine's footprint and state.

Every part may be missing; a missing part is None and its reason says why
("no NVIDIA GPU", "NVML: driver not loaded"), never a sentinel number.
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fontaine_tui.core.host.memory import (
    Footprint,
    HostRam,
    host_ram,
    parse_meminfo,
    process_memory,
    summed,
)
from fontaine_tui.core.host.nvml import GpuProcess, GpuSample, read_gpus
from fontaine_tui.core.text import MIB

__all__ = [
    "GpuProcess",
    "GpuSample",
    "ProcessSample",
    "TelemetrySnapshot",
    "sample",
    "sample_remote",
    "parse_smi_gpus",
    "parse_smi_apps",
    "SMI_GPU_QUERY",
    "SMI_APPS_QUERY",
]

_ENV = object()
GONE = " is gone"  # the end of process_reason when the engine's pid no longer exists


def gone_reason(pid: int) -> str:
    return f"process {pid}{GONE}"


@dataclass(frozen=True, slots=True)
class ProcessSample:
    """The engine process and its children (DataLoader workers, torchrun ranks)."""

    pid: int
    mem: int  # bytes, summed over the tree: PSS (memory.process_memory), a shared page once
    cpu_pct: float | None  # percent of one core, summed; None on the first look
    processes: int
    state: str = ""  # psutil status of the root: "running", "disk-sleep", ...; "" unknown
    states: tuple[tuple[int, str], ...] = ()  # (pid, status) of every member, the root first
    mem_kind: str = "PSS"  # what `mem` is: "PSS", or "PSS+RSS" where a member's PSS was unread

    def pids_in(self, *statuses: str) -> tuple[int, ...]:
        """The members (root first) whose status is one of `statuses`."""
        return tuple(pid for pid, status in self.states if status in statuses)


@dataclass(frozen=True, slots=True)
class TelemetrySnapshot:
    time: float
    gpus: tuple[GpuSample, ...] | None
    gpu_reason: str
    ram: HostRam | None
    ram_reason: str
    process: ProcessSample | None = None
    process_reason: str = "no engine process"
    host: str = ""
    engine_pid: int | None = None  # the pid asked about, also when it is gone

    @property
    def process_gone(self) -> bool:
        """The engine's pid was sampled and no such process exists any more."""
        return self.process is None and self.process_reason.endswith(GONE)

    @property
    def gpu_status(self) -> str:
        return "" if self.gpus is not None else f"no GPU telemetry ({self.gpu_reason})"

    def gpu_util(self) -> float | None:
        """Mean utilisation over the GPUs that report it."""
        if not self.gpus:
            return None
        values = [g.util_pct for g in self.gpus if g.util_pct is not None]
        return sum(values) / len(values) if values else None


# -- local ----------------------------------------------------------------------------------

_procs: dict[int, Any] = {}  # psutil.Process by pid, kept so cpu_percent has a previous look
_primed: set[int] = set()  # pids whose cpu_percent has been called once


def _tree(pid: int) -> list[Any]:
    import psutil

    root = _procs.get(pid)
    if root is None or not root.is_running():
        root = psutil.Process(pid)
        _procs[pid] = root
        _primed.discard(pid)
    members = [root]
    for child in root.children(recursive=True):
        cached = _procs.setdefault(child.pid, child)
        members.append(cached)
    return members


def _forget(pid: int) -> None:
    _procs.pop(pid, None)
    _primed.discard(pid)


def sample_process(pid: int) -> tuple[ProcessSample | None, str]:
    """The process tree under `pid`: its memory (PSS), CPU and each member's status.

    A zombie is still a process (its status says "zombie"). A pid with no process at all is
    gone."""
    import psutil

    try:
        members = _tree(pid)
    except psutil.ZombieProcess:  # where psutil refuses a zombie outright (not on Linux)
        _forget(pid)
        return ProcessSample(pid, 0, None, 1, "zombie", ((pid, "zombie"),)), ""
    except psutil.NoSuchProcess:
        _forget(pid)
        return None, gone_reason(pid)
    except psutil.AccessDenied:
        return None, f"process {pid}: access denied"
    return _sample_members(pid, members)


def _look_at(p: Any) -> tuple[str, float, Footprint]:
    """One member's status, CPU percent since its last look, and memory.

    Raises psutil's NoSuchProcess where it ended between the reads."""
    import psutil

    with p.oneshot():
        status = p.status()
        pct = p.cpu_percent(interval=None)
    mem = process_memory(p.pid)
    if mem is None:  # it ended between the two reads
        raise psutil.NoSuchProcess(p.pid)
    return str(status), pct, mem


def _counted_cpu(pid: int, pct: float) -> float:
    """A member's CPU percent, or nothing the first time it is seen (no previous look)."""
    counted = pct if pid in _primed else 0.0
    _primed.add(pid)
    return counted


def _sample_members(pid: int, members: list[Any]) -> tuple[ProcessSample | None, str]:
    """Sum the tree's members; a member that went is left out, and the root gone is gone."""
    import psutil

    cpu = 0.0
    held: list[Footprint] = []
    states: list[tuple[int, str]] = []
    first = pid not in _primed  # a child seen for the first time adds nothing this once
    for p in members:
        try:
            status, pct, mem = _look_at(p)
        except psutil.ZombieProcess:
            states.append((p.pid, "zombie"))
            continue
        except psutil.NoSuchProcess:
            _forget(p.pid)
            if p.pid == pid:  # the root went while we looked
                return None, gone_reason(pid)
            continue
        except psutil.AccessDenied:
            _forget(p.pid)
            continue
        held.append(mem)
        states.append((p.pid, status))
        cpu += _counted_cpu(p.pid, pct)
    root = states[0][1] if states and states[0][0] == pid else ""
    total = summed(held)
    sample = ProcessSample(
        pid, total.bytes, None if first else cpu, len(states), root, tuple(states), total.kind
    )
    return sample, ""


def sample(
    cuda_visible_devices: Any = _ENV,
    pid: int | None = None,
    *,
    nvml: Any = None,
    meminfo_text: str | None = None,
    clock: Callable[[], float] = time.time,
) -> TelemetrySnapshot:
    """Sample this host. `cuda_visible_devices` defaults to the environment's value."""
    from fontaine_tui.core.host.memory import hostname

    visible = (
        os.environ.get("CUDA_VISIBLE_DEVICES")
        if cuda_visible_devices is _ENV
        else cuda_visible_devices
    )
    gpus, gpu_reason = read_gpus(visible, nvml)
    ram, ram_reason = host_ram(meminfo_text)
    proc, proc_reason = (None, "no engine process") if pid is None else sample_process(pid)
    return TelemetrySnapshot(
        clock(), gpus, gpu_reason, ram, ram_reason, proc, proc_reason, hostname(), pid
    )


# -- remote (over the SSH source's run_command) ----------------------------------------------

SMI_GPU_QUERY = (
    "nvidia-smi",
    "--query-gpu=uuid,index,name,utilization.gpu,memory.used,"
    "memory.total,power.draw,temperature.gpu",
    "--format=csv,noheader,nounits",
)
SMI_APPS_QUERY = (
    "nvidia-smi",
    "--query-compute-apps=gpu_uuid,pid,process_name,used_memory",
    "--format=csv,noheader,nounits",
)


def _field(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


def parse_smi_gpus(text: str) -> tuple[GpuSample, ...]:
    """Rows of SMI_GPU_QUERY output; raises ValueError on a line that is not such a row."""
    out: list[GpuSample] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cols = [c.strip() for c in line.split(",")]
        if len(cols) != 8 or not cols[1].isdigit():
            raise ValueError(f"not an nvidia-smi GPU row: {line[:80]!r}")
        uuid, index, name, util, used, total, power, temp = cols
        mem_used, mem_total = _field(used), _field(total)
        out.append(
            GpuSample(
                uuid=uuid,
                index=int(index),
                cuda_index=len(out),
                name=name,
                util_pct=_field(util),
                mem_used=None if mem_used is None else int(mem_used * MIB),
                mem_total=None if mem_total is None else int(mem_total * MIB),
                power_w=_field(power),
                temp_c=_field(temp),
                processes=None,
            )
        )
    return tuple(out)


def parse_smi_apps(text: str) -> dict[str, list[GpuProcess]]:
    """Rows of SMI_APPS_QUERY output by GPU UUID; lines that do not parse are skipped."""
    out: dict[str, list[GpuProcess]] = {}
    for line in text.splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) != 4 or not cols[1].isdigit():
            continue
        used = _field(cols[3])
        out.setdefault(cols[0], []).append(
            GpuProcess(
                int(cols[1]), cols[2].rsplit("/", 1)[-1], None if used is None else int(used * MIB)
            )
        )
    return out


async def _call(run_command: Callable[[list[str]], Any], argv: tuple[str, ...]) -> str:
    result = run_command(list(argv))
    if inspect.isawaitable(result):
        result = await result
    return result.decode(errors="replace") if isinstance(result, bytes) else str(result)


async def sample_remote(
    run_command: Callable[[list[str]], bytes | Awaitable[bytes]],
    host: str = "",
    clock: Callable[[], float] = time.time,
) -> TelemetrySnapshot:
    """The same snapshot from nvidia-smi and /proc/meminfo on the far side."""
    gpus, gpu_reason = await _remote_gpus(run_command)
    ram, ram_reason = await _remote_ram(run_command)
    return TelemetrySnapshot(
        clock(),
        gpus,
        gpu_reason,
        ram,
        ram_reason,
        None,
        "remote run: engine process not sampled",
        host,
    )


async def _remote_gpus(
    run_command: Callable[[list[str]], Any],
) -> tuple[tuple[GpuSample, ...] | None, str]:
    """The far side's GPUs from nvidia-smi, each with its processes where those read."""
    try:
        raw = await _call(run_command, SMI_GPU_QUERY)
        gpus = parse_smi_gpus(raw) or None
    except Exception as exc:  # the link or nvidia-smi failed: that part is unknown
        return None, f"nvidia-smi: {_why(exc, SMI_GPU_QUERY)}"
    if not gpus:
        return None, "no NVIDIA GPU"
    try:
        apps = parse_smi_apps(await _call(run_command, SMI_APPS_QUERY))
    except Exception:  # processes unknown, the rest of the GPU row still stands
        return gpus, ""
    return tuple(_with_processes(g, tuple(apps.get(g.uuid, ()))) for g in gpus), ""


async def _remote_ram(run_command: Callable[[list[str]], Any]) -> tuple[HostRam | None, str]:
    """The far side's RAM from its /proc/meminfo."""
    try:
        parsed = parse_meminfo(await _call(run_command, ("cat", "/proc/meminfo")))
    except Exception as exc:  # the link failed: RAM is unknown this time
        return None, f"remote /proc/meminfo: {_why(exc, ('cat', '/proc/meminfo'))}"
    if not parsed:
        return None, "no MemTotal in remote /proc/meminfo"
    return HostRam(parsed[0], parsed[1], "remote meminfo"), ""


def _why(exc: BaseException, argv: tuple[str, ...]) -> str:
    """The first line of an error, without the echoed command line (it hides the cause)."""
    import shlex

    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return first.replace(shlex.join(argv), argv[0])[:200]


def _with_processes(g: GpuSample, procs: tuple[GpuProcess, ...]) -> GpuSample:
    from dataclasses import replace

    return replace(g, processes=procs)
