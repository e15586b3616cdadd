"""Host guards with a fake NVML layer: a busy GPU refuses the launch and writes nothing; a
driver error degrades to "no GPU telemetry"."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fontaine_tui import cli
from fontaine_tui.core.host import nvml
from fontaine_tui.core.host.nvml import read_gpus, visible_order
from fontaine_tui.core.host.telemetry import sample
from fontaine_tui.core.launch import guards
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from tests.core.launch.conftest import (
    FakeGpu,
    FakeNvml,
    FakeProc,
    NVMLError_DriverNotLoaded,
    preset_variant,
)

UUIDS = ["GPU-aaaa1111-0000", "GPU-bbbb2222-0000", "GPU-cccc3333-0000"]


def _fake(busy_pid: int | None = None, on: int = 0) -> FakeNvml:
    gpus = [FakeGpu(u) for u in UUIDS]
    if busy_pid is not None:
        gpus[on].procs = [FakeProc(busy_pid, 7 << 30)]
        gpus[on].used = 7 << 30
    return FakeNvml(gpus, names={4242: "/usr/bin/python3"})


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_foreign_compute_process_refuses_launch_and_writes_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    registry_path: Path,
) -> None:
    fake = _fake(busy_pid=4242, on=0)
    monkeypatch.setattr(nvml, "_load", lambda: fake)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    preset = preset_variant(tmp_path, device='"cuda"')
    work = tmp_path / "work"
    work.mkdir()
    before = _files(tmp_path)
    code = cli.main(["launch", str(preset), "--plain", "--output-dir", str(work / "run")])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("fontaine-tui: error: refusing to launch:")
    assert "pid 4242 python3 holding 7168 MiB" in lines[0]
    assert "GPU 0 (NVIDIA H100 80GB HBM3, GPU-aaaa1111-0000) is busy" in lines[0]
    assert _files(tmp_path) == before  # no run folder, no prereg, no registry
    assert not registry_path.exists()
    assert fake.inits == fake.shutdowns == 1


def test_busy_gpu_outside_the_visible_set_does_not_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GPU 0 busy, but CUDA_VISIBLE_DEVICES points the run at NVML GPU 2 (by UUID prefix)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-cccc")
    preset = load_preset(preset_variant(tmp_path, device='"cuda"'))
    t = sample(nvml=_fake(busy_pid=4242, on=0))
    found = guards.check_gpus(preset, t)
    assert [f.level for f in found] == ["ok"]
    assert "GPU-cccc3333-0000" in found[0].message
    # and with the busy one visible, it refuses, naming the pid
    t = sample("1,0", nvml=_fake(busy_pid=4242, on=0))
    preset2 = load_preset(preset_variant(tmp_path, base="smoke", name="two", device='"cuda"'))
    assert guards.check_gpus(preset2, t)[0].level == "ok"  # nproc 1 uses cuda 0 = NVML 1
    t = sample("0,1", nvml=_fake(busy_pid=4242, on=0))
    assert guards.refusal(guards.check_gpus(preset2, t)) is not None


def test_own_process_on_the_gpu_is_not_foreign(tmp_path: Path) -> None:
    preset = load_preset(preset_variant(tmp_path, device='"cuda"'))
    t = sample("0", nvml=_fake(busy_pid=os.getpid(), on=0))
    assert [f.level for f in guards.check_gpus(preset, t)] == ["ok"]


def test_more_ranks_than_visible_gpus_refuses(tmp_path: Path) -> None:
    preset = load_preset(preset_variant(tmp_path, device='"cuda"', nproc="2"))
    t = sample("1", nvml=_fake())
    [finding] = guards.check_gpus(preset, t)
    assert finding.level == "refuse"
    assert "platform.nproc = 2 but only 1 GPU(s)" in finding.message


def test_driver_error_degrades_to_no_gpu_telemetry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeNvml([FakeGpu(UUIDS[0])], init_error=NVMLError_DriverNotLoaded())
    t = sample(None, nvml=fake)
    assert t.gpus is None
    assert t.gpu_reason == "NVML: driver not loaded"
    assert t.gpu_status == "no GPU telemetry (NVML: driver not loaded)"
    assert t.ram is not None  # the rest of the snapshot still stands
    # doctor shows it and a launch on device auto is not refused for it
    monkeypatch.setattr(nvml, "_load", lambda: fake)
    preset = preset_variant(tmp_path, device='"auto"')
    code = cli.main(["doctor", str(preset), "--output-dir", str(tmp_path / "run")])
    out = capsys.readouterr().out
    assert code == 0, out
    # said once: in the GPU check, not again as the telemetry's `gpu:` line
    assert out.count("no GPU telemetry (NVML: driver not loaded)") == 1, out
    assert "cannot check that GPUs are free" in out, out
    assert "launch would go ahead" in out
    assert not (tmp_path / "run").exists()


def test_driver_error_mid_query_degrades_too() -> None:
    class Broken(FakeNvml):
        def nvmlDeviceGetUUID(self, h):  # noqa: N802
            raise NVMLError_DriverNotLoaded()

    fake = Broken([FakeGpu(UUIDS[0])])
    gpus, reason = read_gpus(None, fake)
    assert gpus is None and reason == "NVML: driver not loaded"
    assert fake.shutdowns == 1


def test_no_gpu_and_hidden_gpus_have_reasons() -> None:
    assert read_gpus(None, FakeNvml([])) == (None, "no NVIDIA GPU")
    gpus, reason = read_gpus("", FakeNvml([FakeGpu(UUIDS[0])]))
    assert gpus is None and "hides every GPU" in reason


def test_unsupported_queries_leave_fields_none() -> None:
    class Partial(FakeNvml):
        def nvmlDeviceGetPowerUsage(self, h):  # noqa: N802
            raise RuntimeError("Not Supported")

    g = FakeGpu(UUIDS[0], procs=None)
    [s], reason = read_gpus(None, Partial([g]))
    assert reason == ""
    assert s.power_w is None and s.processes is None
    assert s.util_pct == 0.0 and s.temp_c == 31.0 and s.mem_total == 80 << 30


def test_real_nvml_without_a_driver_reports_why() -> None:
    gpus, reason = read_gpus(None)
    if gpus is not None:
        pytest.skip("this host has NVIDIA GPUs")
    assert reason.startswith("NVML: ")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, [0, 1, 2]),
        ("2,0", [2, 0]),
        ("GPU-bbbb", [1]),
        ("bbbb2222", [1]),
        ("1,7,0", [1]),  # CUDA stops at the first invalid entry
        ("0,0", []),  # a repeated device invalidates the list
        ("", []),
        ("-1", []),
        ("GPU-", []),  # ambiguous prefix
    ],
)
def test_visible_order_follows_cuda_rules(spec: str | None, expected: list[int]) -> None:
    assert visible_order(spec, UUIDS) == expected


def test_cpu_preset_skips_the_gpu_check(tmp_path: Path) -> None:
    preset = load_preset("smoke")
    t = sample(None, nvml=_fake(busy_pid=4242, on=0))
    [f] = guards.check_gpus(preset, t)
    assert f.level == "info" and "device cpu" in f.message
    folder = RunFolder(tmp_path / "x")
    assert guards.refusal(guards.check_all(preset, folder, t)) is None


def test_device_cuda_without_a_gpu_refuses_but_an_nvml_hiccup_only_warns(tmp_path: Path) -> None:
    preset = load_preset(preset_variant(tmp_path, device='"cuda"'))
    dead = sample("0", nvml=FakeNvml([FakeGpu(UUIDS[0])], init_error=NVMLError_DriverNotLoaded()))
    [f] = guards.check_gpus(preset, dead)
    assert f.level == "refuse" and "no GPU telemetry (NVML: driver not loaded)" in f.message
    hidden = sample("", nvml=_fake())
    assert guards.check_gpus(preset, hidden)[0].level == "refuse"
    odd = sample("0", nvml=FakeNvml([FakeGpu(UUIDS[0])], init_error=RuntimeError("Unknown Error")))
    [f] = guards.check_gpus(preset, odd)
    assert f.level == "warn" and "NVML: Unknown Error" in f.message
