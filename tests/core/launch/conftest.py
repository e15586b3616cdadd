"""Shared pieces for the launch tests: an isolated registry, a fake NVML layer, presets."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PRESETS = ROOT / "presets"


def preset_variant(
    tmp_path: Path, base: str = "smoke", name: str | None = None, **replacements: str
) -> Path:
    """A copy of presets/BASE.toml with `key = value` lines replaced (regex on the key)."""
    text = (PRESETS / f"{base}.toml").read_text()
    for key, value in replacements.items():
        text, n = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
        assert n >= 1, key
    path = tmp_path / f"{name or base + '_variant'}.toml"
    path.write_text(text)
    return path


def without_amendments(tmp_path: Path, base: str = "demosonly_1gpu") -> Path:
    text = (PRESETS / f"{base}.toml").read_text()
    start = text.index("[[amendments]]")
    end = text.index("[gates]")
    path = tmp_path / f"{base}_noamend.toml"
    path.write_text(text[:start] + text[end:])
    return path


# -- a fake NVML layer with pynvml's names ---------------------------------------------------


class NVMLError(Exception):
    pass


class NVMLError_DriverNotLoaded(NVMLError):
    def __str__(self) -> str:
        return "Driver Not Loaded"


class NVMLError_NotSupported(NVMLError):
    pass


@dataclass
class FakeProc:
    pid: int
    usedGpuMemory: int | None


@dataclass
class FakeGpu:
    uuid: str
    name: str = "NVIDIA H100 80GB HBM3"
    util: int = 0
    used: int = 1 << 20
    total: int = 80 << 30
    power_mw: int = 70_000
    temp: int = 31
    procs: list[FakeProc] | None = field(default_factory=list)


class _Util:
    def __init__(self, gpu: int) -> None:
        self.gpu = gpu


class _Mem:
    def __init__(self, used: int, total: int) -> None:
        self.used, self.total = used, total


class FakeNvml:
    """Stands in for the pynvml module; `init_error` makes nvmlInit raise."""

    NVMLError = NVMLError

    def __init__(
        self,
        gpus: list[FakeGpu],
        init_error: Exception | None = None,
        names: dict[int, str] | None = None,
    ) -> None:
        self.gpus, self.init_error, self.names = gpus, init_error, names or {}
        self.inits = self.shutdowns = 0

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise self.init_error
        self.inits += 1

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> FakeGpu:
        return self.gpus[i]

    def nvmlDeviceGetUUID(self, h: FakeGpu) -> str:
        return h.uuid

    def nvmlDeviceGetName(self, h: FakeGpu) -> str:
        return h.name

    def nvmlDeviceGetUtilizationRates(self, h: FakeGpu) -> _Util:
        return _Util(h.util)

    def nvmlDeviceGetMemoryInfo(self, h: FakeGpu) -> _Mem:
        return _Mem(h.used, h.total)

    def nvmlDeviceGetPowerUsage(self, h: FakeGpu) -> int:
        return h.power_mw

    def nvmlDeviceGetTemperature(self, h: FakeGpu, sensor: int) -> int:
        return h.temp

    def nvmlDeviceGetComputeRunningProcesses(self, h: FakeGpu) -> list[FakeProc]:
        if h.procs is None:
            raise NVMLError_NotSupported()
        return h.procs

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        if pid in self.names:
            return self.names[pid]
        raise NVMLError_NotSupported()
