"""An alert raised through the trainer's own library (trackio.alert, W&B's run.alert offline,
a JSONL alert line) reaches `fontaine-tui attach --plain` while the writer still runs, once,
at its level: the REAL library writes, the tool follows, both real subprocesses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TITLE, TEXT = "loss spike", "batch 17 skipped: its loss was 1e9"  # tests/writers/alerting.py's
SOURCES = {"trackio": 'kind = "trackio"\nrun = "live"', "wandb": 'kind = "wandb"'}
SOURCES["jsonl"] = 'kind = "jsonl"'


def preset(kind: str) -> str:
    return f"""[run]
name = "alerting-{kind}"
question = "Does the eval loss rise after the first probe?"

[source]
{SOURCES[kind]}

[verdict]
metric = "eval/loss"
anchor_step = 4
endpoint_step = 12
healthy_max = 0.05
drift_min = 0.5
"""


def env_for(root: Path, out: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TRACKIO_", "GRADIO_", "WANDB_", "HF_TOKEN", "FONTAINE_NOTIFY"))
    }
    env.update(
        PYTHONPATH=str(ROOT),
        PYTHONUNBUFFERED="1",
        FONTAINE_REGISTRY=str(root / "state" / "registry.toml"),
        XDG_CONFIG_HOME=str(root / "config"),
        HF_HUB_OFFLINE="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        TRACKIO_DIR=str(out),
        GRADIO_ANALYTICS_ENABLED="False",
        WANDB_MODE="offline",
        WANDB_SILENT="true",
        WANDB_DIR=str(out),
        WANDB_CONFIG_DIR=str(root / "wandb-config"),
        WANDB_CACHE_DIR=str(root / "wandb-cache"),
        WANDB_DATA_DIR=str(root / "wandb-data"),
    )
    return env


@pytest.mark.parametrize("kind", list(SOURCES))
def test_the_libraries_alert_reaches_attach_while_the_writer_runs(kind, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "p.toml").write_text(preset(kind))
    env = env_for(tmp_path, out)
    log = open(tmp_path / "writer.log", "w")  # noqa: SIM115 - closed below
    writer = subprocess.Popen(
        [sys.executable, "-m", "tests.writers.alerting", str(out), kind],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    attach = subprocess.Popen(
        [sys.executable, "-m", "fontaine_tui", "attach", str(out), "--plain"]
        + ["--preset", str(tmp_path / "p.toml")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(attach.stdout), daemon=True)
    reader.start()
    said, running = [], None
    try:
        deadline = time.monotonic() + 60
        while not lines and time.monotonic() < deadline and attach.poll() is None:
            time.sleep(0.02)
        (out.parent / "go").touch()  # the follower is up: the writer starts its steps
        while time.monotonic() < deadline and attach.poll() is None:
            said = [ln for ln in list(lines) if TITLE in ln]
            if said:
                running = writer.poll() is None  # shown while the writer still runs
                break
            time.sleep(0.05)
        time.sleep(1.5)  # a few more reads of the same store: the alert is not said again
    finally:
        (out.parent / "stop").touch()
        writer.wait(60)
        log.close()
        attach.send_signal(signal.SIGINT)
        try:
            attach.wait(15)
        except subprocess.TimeoutExpired:
            attach.kill()
            attach.wait()
        reader.join(5)
    text = "".join(lines)
    assert said and running, f"{text}\n{(tmp_path / 'writer.log').read_text()[-2000:]}"
    alerts = [ln for ln in lines if TITLE in ln]
    assert len(alerts) == 1, text
    assert alerts[0].startswith("ALERT  the trainer's alert at step ") and TEXT in alerts[0]
