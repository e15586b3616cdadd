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

from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.run.attempts import read_attempts
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Registry
from fontaine_tui.core.verdict.record import EXIT_CODES
from tests.core.notify.server import Hook

if importlib.util.find_spec("torch") is None:  # the engine needs it (not imported here)
    pytest.skip("torch is not installed", allow_module_level=True)
# the engines it launches train on the default corpus: built once for the run (corpus_dir)
pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.usefixtures("corpus_dir")]
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
    # above the tiny model's own moves (about 0.8 from step 10 to 20), or the lock cannot stand
    text = text.replace("[verdict]\n", "[verdict]\nmax_probe_change = 2.0\n")
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
    # read at the last probe before the end (the stop lands a few steps after the lock)
    assert (doc["verdict"], doc["provisional"], doc["read_step"]) == (
        "HEALTHY",
        False,
        last // 10 * 10,
    )
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


TRAINER = """import json, signal, sys, time
from pathlib import Path
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
stop = []
signal.signal(signal.SIGINT, lambda *a: stop.append(1))
with open(out / "log.jsonl", "a") as f:
    for step in range(1, 401):
        time.sleep(0.05)
        f.write(json.dumps({"step": step, "train/loss": 1.0 / step}) + "\\n")
        if step % 10 == 0:
            f.write(json.dumps({"step": step, "eval/chunk_mae": 3.0}) + "\\n")
        f.flush()
        if stop:
            (out / f"checkpoint-{step}").mkdir()
            sys.exit(130)
"""


def test_a_launched_command_stops_on_its_lock_and_reads_it_without_an_end_line(
    tmp_path: Path, registry_path: Path
) -> None:
    """A [command] whose JSONL log never says the run ended: attempts.jsonl's stop does."""
    (tmp_path / "trainer.py").write_text(TRAINER)
    (tmp_path / "cmd_lock.toml").write_text(f"""[run]
name = "cmd_lock"
output_dir = "runs/cmd"

[command]
argv = ["{sys.executable}", "{tmp_path / "trainer.py"}", "{{output_dir}}"]

[source]
kind = "jsonl"
eval_every = 10

[verdict]
metric = "eval/chunk_mae"
anchor_step = 10
endpoint_step = 400
healthy_max = 50.0
drift_min = 100.0
max_probe_change = 0.5

[gates]
stop_on_lock = true
""")
    res = cli(tmp_path, "launch", "./cmd_lock.toml", "--plain", "--poll", "0.5")
    assert res.returncode == EXIT_CODES["HEALTHY"], res.stdout + res.stderr
    folder = RunFolder(tmp_path / "runs" / "cmd")
    [attempt] = read_attempts(folder)
    assert attempt.cause == "decision-locked" and 10 < (attempt.last_step or 0) < 400
    assert (folder.root / f"checkpoint-{attempt.last_step}").is_dir()
    res = cli(tmp_path, "verdict", str(folder.root), "--json")
    doc = json.loads(res.stdout)
    last = attempt.last_step
    assert (doc["verdict"], doc["provisional"], doc["read_step"]) == (
        "HEALTHY",
        False,
        last // 10 * 10,
    )
    assert doc["reason"].startswith(f"stopped at step {last}: decision locked at step 10")
