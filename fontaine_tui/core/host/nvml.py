"""GPUs through NVML (the `pynvml` module of nvidia-ml-py), identified by UUID.

The NVML layer is any object with pynvml's function names, so tests pass a fake one;
the real module is imported only when no layer is given. NVML numbers devices in PCI
order, CUDA_VISIBLE_DEVICES renumbers them (by index or UUID prefix): we keep both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class GpuProcess:
    pid: int
    name: str
    used_mem: int | None  # bytes; None where the driver does not say


@dataclass(frozen=True, slots=True)
class GpuSample:
    uuid: str
    index: int  # NVML (PCI) index
    cuda_index: int | None  # position under CUDA_VISIBLE_DEVICES; None when not visible
    name: str
    util_pct: float | None
    mem_used: int | None
    mem_total: int | None
    power_w: float | None
    temp_c: float | None
    processes: tuple[GpuProcess, ...] | None  # None: the driver would not list them


def visible_order(spec: str | None, uuids: list[str]) -> list[int]:
    """NVML indices in CUDA order under CUDA_VISIBLE_DEVICES.

    CUDA stops at the first bad entry, and a repeated device makes the whole list invalid."""
    if spec is None:
        return list(range(len(uuids)))
    out: list[int] = []
    for token in (t.strip() for t in spec.split(",")):
        if not token or (i := _device_index(token, uuids)) is None:
            break
        if i in out:
            return []
        out.append(i)
    return out


def _device_index(token: str, uuids: list[str]) -> int | None:
    """The NVML index that one CUDA_VISIBLE_DEVICES entry names, None for a bad entry.

    An entry is an index, or a UUID or its unique prefix (`GPU-` may be left off)."""
    if token.lstrip("-").isdigit():
        i = int(token)
        return i if 0 <= i < len(uuids) else None
    want = token if token.startswith(("GPU-", "MIG-")) else f"GPU-{token}"
    hits = [i for i, u in enumerate(uuids) if u.startswith(want)]
    return hits[0] if len(hits) == 1 else None


def _reason(exc: BaseException) -> str:
    name = type(exc).__name__
    if "LibraryNotFound" in name:
        return "NVML: library not found (no NVIDIA driver on this host)"
    if "DriverNotLoaded" in name:
        return "NVML: driver not loaded"
    text = str(exc) or name
    return f"NVML: {text}"


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _maybe(call: Callable[..., Any], *args: Any) -> Any:
    """One per-query value, `call(*args)`; NVML answers NotSupported per device and query."""
    try:
        return call(*args)
    except Exception:  # any NVML error for one field leaves that field unknown
        return None


def _process_name(nv: Any, pid: int) -> str:
    name = _maybe(lambda: nv.nvmlSystemGetProcessName(pid))
    if name:
        return _text(name).rsplit("/", 1)[-1]
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return "?"  # containers see host PIDs that are not in their namespace


def _processes(nv: Any, handle: Any) -> tuple[GpuProcess, ...] | None:
    listed = _maybe(lambda: nv.nvmlDeviceGetComputeRunningProcesses(handle))
    if listed is None:
        return None
    out: list[GpuProcess] = []
    for p in listed:
        used = getattr(p, "usedGpuMemory", None)
        out.append(
            GpuProcess(
                int(p.pid),
                _process_name(nv, int(p.pid)),
                int(used) if isinstance(used, int) else None,
            )
        )
    return tuple(out)


def _load() -> Any:
    import pynvml  # nvidia-ml-py; lazy so `fontaine-tui --help` stays light

    return pynvml


def read_gpus(visible: str | None, nvml: Any = None) -> tuple[tuple[GpuSample, ...] | None, str]:
    """(one sample per GPU the process would see, "") or (None, why there is none)."""
    try:
        nv = nvml if nvml is not None else _load()
    except ImportError:
        return None, "NVML: nvidia-ml-py is not installed"
    try:
        nv.nvmlInit()
    except Exception as exc:  # NVMLError subclasses, OSError from ctypes
        return None, _reason(exc)
    try:
        return _samples(nv, visible)
    except Exception as exc:  # a driver error mid-query degrades the same way
        return None, _reason(exc)
    finally:
        _maybe(nv.nvmlShutdown)


def _samples(nv: Any, visible: str | None) -> tuple[tuple[GpuSample, ...] | None, str]:
    """One sample per GPU in CUDA order, or (None, why there is none); NVML initialized."""
    count = nv.nvmlDeviceGetCount()
    handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    uuids = [_text(nv.nvmlDeviceGetUUID(h)) for h in handles]
    if not handles:
        return None, "no NVIDIA GPU"
    order = visible_order(visible, uuids)
    if not order:
        return None, f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU"
    return tuple(
        _gpu_sample(nv, handles[i], uuids[i], i, cuda_index) for cuda_index, i in enumerate(order)
    ), ""


def _gpu_sample(nv: Any, h: Any, uuid: str, index: int, cuda_index: int) -> GpuSample:
    """One GPU's sample; a query its driver does not answer leaves its field None."""
    util = _maybe(lambda h: nv.nvmlDeviceGetUtilizationRates(h).gpu, h)
    mem = _maybe(lambda h: nv.nvmlDeviceGetMemoryInfo(h), h)
    power = _maybe(lambda h: nv.nvmlDeviceGetPowerUsage(h), h)
    temp = _maybe(lambda h: nv.nvmlDeviceGetTemperature(h, 0), h)  # 0: GPU sensor
    return GpuSample(
        uuid=uuid,
        index=index,
        cuda_index=cuda_index,
        name=_text(_maybe(lambda h: nv.nvmlDeviceGetName(h), h) or "?"),
        util_pct=None if util is None else float(util),
        mem_used=None if mem is None else int(mem.used),
        mem_total=None if mem is None else int(mem.total),
        power_w=None if power is None else power / 1000.0,
        temp_c=None if temp is None else float(temp),
        processes=_processes(nv, h),
    )
