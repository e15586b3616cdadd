"""On a host without a GPU, why there is no GPU telemetry (NVML's answer) is said once.

`doctor` printed it as the telemetry's `gpu:` line and again in the GPU check under it; a
`launch --plain` printed it in the launch's GPU check, in the first-poll warning and in the
babysitter's first poll, the same reading twice. Each now says it once: the check says it
(`cannot check that GPUs are free`), and the first poll, said once, says "no GPU telemetry"
(babysit.jsonl and the notifications keep NVML's words). Real subprocesses on this host;
skipped where NVML sees a GPU."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.host.nvml import read_gpus

ROOT = Path(__file__).resolve().parents[2]
GPUS, REASON = read_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"))
pytestmark = pytest.mark.skipif(GPUS is not None, reason="NVML sees a GPU on this host")


def cli(tmp_path: Path, *argv: str, timeout: float = 60) -> tuple[int, str]:
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
        env={
            **os.environ,
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
            "FONTAINE_REGISTRY": str(tmp_path / "registry.toml"),
            "FONTAINE_BANK": str(tmp_path / "bank"),
            "FONTAINE_NOTIFY": "",
        },
    )
    return res.returncode, res.stdout + res.stderr


@pytest.mark.parametrize("preset", ["pretrain_so101", "smoke"])  # device auto, device cpu
def test_doctor_says_why_there_is_no_gpu_telemetry_once(tmp_path: Path, preset: str) -> None:
    code, out = cli(tmp_path, "doctor", preset)
    assert code == 0, out
    assert out.count(REASON) == 1, out
    assert "no GPU telemetry" in out or "no GPU is used" in out, out


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
@pytest.mark.usefixtures("corpus_dir")  # the default corpus it trains on, built once for the run
def test_a_plain_launch_says_why_there_is_no_gpu_telemetry_once(tmp_path: Path) -> None:
    """A tiny run on device auto, to its end: one NVML line, one first poll. Half the smoke
    preset's steps (20, probes at 10 and 20; the NVML line and the first poll come before
    them) and a short poll, so the end is seen at once and each poll could say it again."""
    text = (ROOT / "presets" / "smoke.toml").read_text()
    for old, new in (
        ('device = "cpu"', 'device = "auto"'),
        ("\nsteps = 40\n", "\nsteps = 20\n"),
        ("\nanchor_step = 20\n", "\nanchor_step = 10\n"),
        ("\ndeclared_before_step = 20\n", "\ndeclared_before_step = 10\n"),  # the anchor
        ("\nendpoint_step = 40\n", "\nendpoint_step = 20\n"),
    ):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (tmp_path / "auto.toml").write_text(text)
    code, out = cli(tmp_path, "launch", "./auto.toml", "--plain", "--poll", "0.5", timeout=500)
    assert code in (0, 3, 4, 5, 6), out  # the run's verdict
    assert out.count(REASON) == 1, out
    assert "info: no GPU telemetry" in out and "cannot check that GPUs are free" in out, out
    polls = [ln for ln in out.splitlines() if "first poll" in ln]
    assert len(polls) == 1 and "no GPU telemetry" in polls[0], polls
    folder = tmp_path / "outputs" / "train" / "smoke"
    [first] = [json.loads(ln) for ln in (folder / "babysit.jsonl").read_text().splitlines()][:1]
    assert REASON in first["gpu_status"]  # the record keeps NVML's words
