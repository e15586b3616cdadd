"""The host wing: what this machine has.

`telemetry.py`: one snapshot of the GPUs, the RAM and the engine's processes.
`nvml.py`: NVIDIA GPUs through NVML.
`memory.py`: cgroup-aware RAM."""

from __future__ import annotations

from fontaine_tui.core.host.memory import HostRam, hostname
from fontaine_tui.core.host.nvml import GpuProcess, GpuSample
from fontaine_tui.core.host.telemetry import TelemetrySnapshot, sample

__all__ = ["GpuProcess", "GpuSample", "HostRam", "TelemetrySnapshot", "hostname", "sample"]
