"""`[gates] stop_on_lock`: the real engine stopped once its decision locks, from the command line.

A variant of presets/smoke.toml whose bounds lock the decision at its first probe (step 10 of
200) is launched with `launch --plain`, and once detached and watched by `fontaine-tui babysit`.
Either watcher stops the engine with a checkpoint, attempts.jsonl records the cause, the stop
is posted to a real webhook, and `fontaine-tui verdict` gives the locked label."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.core.launch.attempts import read_attempts
from fontaine_tui.core.launch.registry import Registry
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.record import EXIT_CODES
from tests.core.notify.server import Hook

if importlib.util.find_spec("torch") is None:  # the engine needs it (not imported here)
    pytest.skip("torch is not installed", allow_module_level=True)
pytestmark = [pytest.mark.engine, pytest.mark.slow]
TIMEOUT = 300
ROOT = Path(__file__).resolve().parents[2]
STEPS = 200


def lock_preset(folder: Path, stop: bool = True, steps: int = STEPS) -> Path:
    """presets/smoke.toml with bounds no probe can cross: the decision locks at step 10."""
    text = (ROOT / "presets" / "smoke.toml").read_text()
    text = text[: text.index("[[amendments]]")] + text[text.index("[gates]") :]
    keys = {
        "name": '"smoke_lock"',
        "steps": str(steps),
        "save_every": "100",
        "anchor_step": "10",
        "endpoint_step": str(steps),
        "healthy_max": "50.0",
        "drift_min": "100.0",
    }
    for key, value in keys.items():
        text, n = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
        assert n == 1, key
    text = re.sub(r"(?m)^(reference|drift_fraction) = .*\n", "", text)
    text = text.replace("[verdict]\n", "[verdict]\nmax_probe_change = 0.5\n")
    if stop:
        text = text.replace("[gates]\n", "[gates]\nstop_on_lock = true\n")
    path = folder / "smoke_lock.toml"
    path.write_text(text)
    return path


def env_for(tmp_path: Path, **more: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("FONTAINE_NOTIFY", None)
    return {**env, **more}


def cli(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=tmp_path,
        env=env_for(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def stopped_on_lock(folder: RunFolder, tmp_path: Path) -> None:
    """The run stopped before its endpoint with a checkpoint, the cause recorded, the verdict
    the locked one."""
    store = load_log(folder.log)
    last = store.last_step
    assert 10 < last < STEPS
    assert store.events[-1].event == "end" and "stopped by SIGINT" in store.events[-1].detail
    assert (folder.root / "checkpoints" / f"step-{last:06d}").is_dir()
    [attempt] = read_attempts(folder)
    assert (attempt.cause, attempt.detail) == (
        "decision-locked",
        "decision locked at step 10 (HEALTHY)",
    )
    assert (attempt.last_step, attempt.checkpoint_step) == (last, last)
    res = cli(tmp_path, "verdict", str(folder.root), "--json")
    doc = json.loads(res.stdout)
    assert res.returncode == EXIT_CODES["HEALTHY"], res.stdout + res.stderr
    assert (doc["verdict"], doc["provisional"], doc["read_step"]) == ("HEALTHY", False, 10)
    assert doc["reason"].startswith(f"stopped at step {last}: decision locked at step 10")
    assert doc["decision"]["stop_on_lock"] is True


def test_launch_plain_stops_on_the_locked_decision(tmp_path: Path, registry_path: Path) -> None:
    hook = Hook()
    folder = RunFolder(tmp_path / "run")
    preset = lock_preset(tmp_path)
    res = cli(
        tmp_path,
        "launch",
        str(preset),
        "--plain",
        "--output-dir",
        "run",
        "--poll",
        "0.5",
        FONTAINE_NOTIFY=hook.url("/hooks/T"),
    )
    out = res.stdout
    assert "decision locked at step 10 (HEALTHY): stop_on_lock stops the run" in out, out
    assert "VERDICT: HEALTHY  [final]  stopped at step" in out
    assert "--resume" not in out  # the stop was the preset's own: nothing to continue
    assert res.returncode == EXIT_CODES["HEALTHY"], out + res.stderr
    stopped_on_lock(folder, tmp_path)
    [entry] = Registry(registry_path).entries()
    assert entry.status == "stopped"
    titles = [json.loads(r.body)["title"] for r in hook.requests]
    hook.close()
    assert "smoke_lock: attempt 1 stopped: decision-locked" in titles
    assert titles[-1] == "smoke_lock: VERDICT HEALTHY"


def test_babysit_stops_a_detached_run_on_its_locked_decision(
    tmp_path: Path, registry_path: Path
) -> None:
    folder = RunFolder(tmp_path / "run")
    preset = lock_preset(tmp_path)
    launched = cli(tmp_path, "launch", str(preset), "--detach", "--output-dir", "run")
    assert launched.returncode == 0, launched.stdout + launched.stderr
    [entry] = Registry(registry_path).entries()
    try:
        res = cli(tmp_path, "babysit", "smoke_lock", "--poll", "0.3")
    finally:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.killpg(entry.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            os.killpg(entry.pid, signal.SIGKILL)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "decision locked at step 10 (HEALTHY): stop_on_lock stops the run" in res.stdout
    stopped_on_lock(folder, tmp_path)
    [after] = Registry(registry_path).entries()
    assert after.status == "stopped"
