"""Whether this host can hold the engine's run: its GPUs free and its RAM enough.

The RAM the platform knobs imply is estimated per piece (a rank, a loader worker, a prefetched
sample); the GPUs the run would use must be visible and hold no other compute process. Each
answers with a Finding (core/launch/findings.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from fontaine_tui.core.host.nvml import GpuSample
from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.launch.findings import Finding
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.preset.sections import layout
from fontaine_tui.core.text import MIB, gib, mib

# RAM the engine needs, per piece (estimates measured on the tiny/small engine, rounded up).
# They were measured as RSS, which counts the pages a worker shares with its rank in both; the
# engine tree's memory as the telemetry gives it (core/host/memory.py's process_memory, PSS)
# counts them once, so the estimate stays above what the tree is seen to hold: the safe side.
RANK_BYTES = 800 * MIB  # one training process: torch, transformers, model, corpus mmap pages
WORKER_BYTES = 400 * MIB  # one DataLoader worker process
SAMPLE_BYTES = 16 << 10  # one prefetched sample: 32x32x3 float image, actions, flow noise
# NVML answers that mean CUDA cannot see a GPU either (other NVML errors only blind us)
NO_GPU = (
    "no NVIDIA GPU",
    "CUDA_VISIBLE_DEVICES=",
    "NVML: library not found",
    "NVML: driver not loaded",
)


@dataclass(frozen=True, slots=True)
class RamEstimate:
    bytes: int
    formula: str


def ram_estimate(preset: Preset) -> RamEstimate:
    """The RAM implied by the platform knobs.

    Per rank, that is the process plus its loader workers, each holding prefetch_factor
    micro-batches in flight."""
    nproc = int(preset.platform["nproc"])
    workers = int(preset.platform["num_workers"])
    prefetch = int(preset.platform["prefetch_factor"])
    _, micro = layout(preset.path, preset.recipe, preset.platform)  # the preset load checked it
    per_worker = WORKER_BYTES + prefetch * micro * SAMPLE_BYTES
    total = nproc * (RANK_BYTES + workers * per_worker)
    formula = (
        f"{nproc} rank(s) x ({RANK_BYTES // MIB} MiB + {workers} workers x "
        f"({WORKER_BYTES // MIB} MiB + prefetch {prefetch} x micro-batch {micro} x "
        f"{SAMPLE_BYTES >> 10} KiB))"
    )
    return RamEstimate(total, formula)


def check_ram(preset: Preset, telemetry: TelemetrySnapshot, yes_ram: bool = False) -> Finding:
    ram = telemetry.ram
    if ram is None:
        return Finding("ram", "warn", f"cannot check host RAM: {telemetry.ram_reason}")
    est = ram_estimate(preset)
    alert = float(preset.gates["ram_alert_frac"]) * ram.total
    warn = float(preset.gates["ram_warn_frac"]) * ram.total
    left = ram.available - est.bytes
    numbers = (
        f"the platform knobs imply ~{gib(est.bytes)} [{est.formula}]; "
        f"{gib(ram.available)} available of {gib(ram.total)} ({ram.source})"
    )
    if left < alert:
        if yes_ram:
            return Finding("ram", "warn", f"RAM: {numbers}; launching anyway (--yes-ram)")
        return Finding(
            "ram",
            "refuse",
            f"RAM: {numbers}, which would leave under "
            f"{float(preset.gates['ram_alert_frac']):.0%} free; lower "
            f"platform.num_workers / prefetch_factor, or --yes-ram to launch anyway",
        )
    if left < warn:
        return Finding(
            "ram",
            "warn",
            f"RAM: {numbers}: under {float(preset.gates['ram_warn_frac']):.0%} would be left free",
        )
    return Finding("ram", "ok", f"RAM: {numbers}")


def check_gpus(
    preset: Preset, telemetry: TelemetrySnapshot, own_pid: int | None = None
) -> list[Finding]:
    device = str(preset.platform["device"])
    nproc = int(preset.platform["nproc"])
    if device == "cpu":
        return [Finding("gpu", "info", "device cpu: no GPU is used")]
    gpus = telemetry.gpus
    if gpus is None:
        return [_gpus_unread(device, telemetry)]
    if nproc > len(gpus):
        return [
            Finding(
                "gpu",
                "refuse",
                f"GPU: platform.nproc = {nproc} but only {len(gpus)} "
                f"GPU(s) are visible (CUDA_VISIBLE_DEVICES="
                f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})",
            )
        ]
    own = os.getpid() if own_pid is None else own_pid
    return [_gpu_free(g, own) for g in gpus[:nproc]]


def _gpus_unread(device: str, telemetry: TelemetrySnapshot) -> Finding:
    """NVML gave no GPUs: a refusal where CUDA cannot see one either, else why not checked."""
    if device == "cuda" and telemetry.gpu_reason.startswith(NO_GPU):
        return Finding("gpu", "refuse", f"platform.device = cuda but {telemetry.gpu_status}")
    return Finding(
        "gpu",
        "warn" if device == "cuda" else "info",
        f"{telemetry.gpu_status}: cannot check that GPUs are free"
        + ("; device auto will run on CPU if CUDA sees none" if device == "auto" else ""),
    )


def _gpu_free(g: GpuSample, own: int) -> Finding:
    """Whether one GPU the run would use holds no compute process but this one (`own`)."""
    label = f"GPU {g.cuda_index} ({g.name}, {g.uuid})"
    if g.processes is None:
        return Finding(
            "gpu",
            "warn",
            f"{label}: the driver does not list its compute "
            "processes; cannot check that it is free",
        )
    foreign = [p for p in g.processes if p.pid != own]
    if not foreign:
        used = "" if g.mem_used is None else f", {mib(g.mem_used, 0)} used"
        return Finding("gpu", "ok", f"{label}: no compute process{used}")
    held = ", ".join(
        f"pid {p.pid} {p.name}" + ("" if p.used_mem is None else f" holding {mib(p.used_mem, 0)}")
        for p in foreign
    )
    return Finding("gpu", "refuse", f"{label} is busy: {held}")
