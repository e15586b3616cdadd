"""Host RAM (meminfo, cgroup v1/v2), the engine's own footprint, and the remote parsers."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.core.host.memory import cgroup_limit, host_ram, parse_meminfo
from fontaine_tui.core.host.telemetry import (
    SMI_APPS_QUERY,
    SMI_GPU_QUERY,
    parse_smi_gpus,
    sample,
    sample_process,
    sample_remote,
)

MEMINFO = """MemTotal:       16384000 kB
MemFree:         1000000 kB
MemAvailable:    8192000 kB
Buffers:           10000 kB
Cached:          2000000 kB
"""
GIB = 1 << 30


def test_meminfo_parses_kib_and_falls_back_without_memavailable() -> None:
    assert parse_meminfo(MEMINFO) == (16384000 * 1024, 8192000 * 1024)
    old = MEMINFO.replace("MemAvailable:    8192000 kB\n", "")
    assert parse_meminfo(old) == (16384000 * 1024, (1000000 + 10000 + 2000000) * 1024)
    assert parse_meminfo("garbage") is None


def _v2(root: Path, path: str, limit: str, current: int, inactive: int = 0) -> None:
    d = root / path.lstrip("/")
    d.mkdir(parents=True, exist_ok=True)
    (d / "memory.max").write_text(limit + "\n")
    (d / "memory.current").write_text(f"{current}\n")
    (d / "memory.stat").write_text(f"anon 1\ninactive_file {inactive}\n")


def test_cgroup_v2_limit_caps_host_ram(tmp_path: Path) -> None:
    _v2(tmp_path, "/box", str(4 * GIB), 3 * GIB, inactive=GIB // 2)
    ram, reason = host_ram(MEMINFO, tmp_path, "0::/box\n")
    assert reason == ""
    assert ram.total == 4 * GIB
    assert ram.available == 4 * GIB - (3 * GIB - GIB // 2)  # page cache is reclaimable
    assert ram.source.startswith("cgroup v2")


def test_cgroup_v2_unlimited_or_above_host_keeps_meminfo(tmp_path: Path) -> None:
    _v2(tmp_path, "/box", "max", GIB)
    ram, _ = host_ram(MEMINFO, tmp_path, "0::/box\n")
    assert ram.source == "meminfo" and ram.total == 16384000 * 1024
    _v2(tmp_path, "/big", str(64 * GIB), GIB)
    ram, _ = host_ram(MEMINFO, tmp_path, "0::/big\n")
    assert ram.source == "meminfo"


def test_cgroup_limit_on_an_ancestor_binds(tmp_path: Path) -> None:
    _v2(tmp_path, "/parent", str(2 * GIB), GIB)
    _v2(tmp_path, "/parent/child", "max", GIB // 2)
    limit = cgroup_limit(tmp_path, "0::/parent/child\n")
    assert limit is not None and limit[0] == 2 * GIB


def test_cgroup_v1_limit(tmp_path: Path) -> None:
    d = tmp_path / "memory" / "docker" / "abc"
    d.mkdir(parents=True)
    (d / "memory.limit_in_bytes").write_text(str(6 * GIB))
    (d / "memory.usage_in_bytes").write_text(str(5 * GIB))
    (d / "memory.stat").write_text(f"cache 1\ntotal_inactive_file {GIB}\n")
    ram, _ = host_ram(MEMINFO, tmp_path, "4:memory:/docker/abc\n0::/\n")
    assert ram.total == 6 * GIB and ram.available == 2 * GIB
    assert ram.source.startswith("cgroup v1")
    # v1 "no limit" is a huge number
    (d / "memory.limit_in_bytes").write_text("9223372036854771712")
    assert host_ram(MEMINFO, tmp_path, "4:memory:/docker/abc\n")[0].source == "meminfo"


def test_available_never_exceeds_meminfo(tmp_path: Path) -> None:
    _v2(tmp_path, "/", str(12 * GIB), GIB)
    ram, _ = host_ram(MEMINFO, tmp_path, "0::/\n")
    assert ram.total == 12 * GIB and ram.available == 8192000 * 1024


def test_missing_meminfo_is_a_reason_not_a_number() -> None:
    ram, reason = host_ram("nothing here")
    assert ram is None and "MemTotal" in reason


def test_engine_process_tree_memory_and_cpu() -> None:
    code = (
        "import subprocess, sys, time\n"
        "c = subprocess.Popen([sys.executable, '-c', 'x = bytearray(64 << 20); "
        "import time; time.sleep(30)'])\n"
        "t = time.time()\n"
        "while time.time() - t < 30: pass\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        first, reason = sample_process(proc.pid)
        assert reason == "" and first.cpu_pct is None  # no previous look yet
        deadline = time.monotonic() + 20
        while True:  # the child needs a moment to start and touch its buffer
            time.sleep(0.5)
            later, _ = sample_process(proc.pid)
            if later.processes == 2 and later.mem > 64 << 20 or time.monotonic() > deadline:
                break
        assert later.processes == 2
        assert later.mem > 64 << 20 and later.mem_kind == "PSS"  # the child's buffer counts
        assert later.cpu_pct is not None and later.cpu_pct > 5  # the parent spins
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the parent and its child
        proc.wait()
    gone, reason = sample_process(proc.pid)
    assert gone is None and "gone" in reason


def test_local_sample_has_reasons_for_missing_parts() -> None:
    t = sample(None, pid=None)
    assert t.ram is not None and t.process is None and t.process_reason == "no engine process"
    assert (t.gpus is None) == bool(t.gpu_reason)


SMI = (
    "GPU-aaaa, 0, NVIDIA H200, 87, 70000, 143771, 512.34, 61\n"
    "GPU-bbbb, 1, NVIDIA H200, [N/A], 1, 143771, [Not Supported], 40\n"
)
APPS = "GPU-aaaa, 777, /usr/bin/python3, 69000\n"


def _runner(answers: dict[tuple[str, ...], bytes | Exception], asynchronous: bool = True):
    calls = []

    def answer(argv: list[str]) -> bytes:
        calls.append(tuple(argv))
        result = answers[tuple(argv)]
        if isinstance(result, Exception):
            raise result
        return result

    if not asynchronous:
        return answer, calls

    async def run_command(argv: list[str]) -> bytes:
        await asyncio.sleep(0)
        return answer(argv)

    return run_command, calls


@pytest.mark.parametrize("asynchronous", [True, False])
def test_remote_sample_from_nvidia_smi_and_meminfo(asynchronous: bool) -> None:
    run, calls = _runner(
        {
            SMI_GPU_QUERY: SMI.encode(),
            SMI_APPS_QUERY: APPS.encode(),
            ("cat", "/proc/meminfo"): MEMINFO.encode(),
        },
        asynchronous,
    )
    t = asyncio.run(sample_remote(run, host="gpubox"))
    a, b = t.gpus
    assert (a.uuid, a.index, a.name, a.util_pct, a.power_w, a.temp_c) == (
        "GPU-aaaa",
        0,
        "NVIDIA H200",
        87.0,
        512.34,
        61.0,
    )
    assert a.mem_used == 70000 << 20 and a.mem_total == 143771 << 20
    assert [(p.pid, p.name, p.used_mem) for p in a.processes] == [(777, "python3", 69000 << 20)]
    assert b.util_pct is None and b.power_w is None and b.processes == ()
    assert t.ram.total == 16384000 * 1024 and t.ram.source == "remote meminfo"
    assert t.host == "gpubox" and t.process is None


def test_remote_without_nvidia_smi_keeps_ram_and_says_why() -> None:
    run, _ = _runner(
        {
            SMI_GPU_QUERY: RuntimeError("sh: 1: nvidia-smi: not found"),
            ("cat", "/proc/meminfo"): MEMINFO.encode(),
        }
    )
    t = asyncio.run(sample_remote(run))
    assert t.gpus is None and t.gpu_reason == "nvidia-smi: sh: 1: nvidia-smi: not found"
    assert t.gpu_status.startswith("no GPU telemetry")
    assert t.ram is not None


def test_remote_garbage_output_is_a_reason() -> None:
    run, _ = _runner(
        {
            SMI_GPU_QUERY: b"NVIDIA-SMI has failed because it couldn't communicate "
            b"with the NVIDIA driver.\n",
            ("cat", "/proc/meminfo"): b"",
        }
    )
    t = asyncio.run(sample_remote(run))
    assert t.gpus is None and "not an nvidia-smi GPU row" in t.gpu_reason
    assert t.ram is None and "MemTotal" in t.ram_reason


def test_smi_parser_rejects_wrong_columns() -> None:
    with pytest.raises(ValueError):
        parse_smi_gpus("GPU-aaaa, 0, name\n")
    assert parse_smi_gpus("\n") == ()
