"""`launch --resume` of a run whose endpoint is already probed: refused in one line, exit 2.

Its read is final once the endpoint in force is probed, however its last attempt ended: a run
stopped past its endpoint (a trainer whose own schedule goes on, an engine whose recipe
trains beyond the verdict's endpoint) has nothing left to resume for the verdict. A resume
would train past the endpoint and add probes the pre-registration never planned. It is
refused before anything starts or is written. Real subprocesses: the CLI, a Python trainer
writing JSONL, and the real engine (presets/smoke.toml cut to 30 steps, read at 10 and 20).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.commands.test_resume_finished import snapshot

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
# the endpoint (40) probed, then its own schedule goes on, slowly, past it
TRAINER = """import json, sys, time
from pathlib import Path
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
with open(out / "metrics.jsonl", "a") as fh:
    for s in range(1, 100000):
        rec = {"step": s, "loss": 2.0 / s}
        if s % 10 == 0:
            rec["eval_loss"] = 1.8 - s / 1000
        fh.write(json.dumps(rec) + "\\n")
        fh.flush()
        time.sleep(0.01 if s < 40 else 0.2)
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "FONTAINE_NOTIFY"}
    env.update(PYTHONUNBUFFERED="1", XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    return env


def _cli(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _watched(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fontaine_tui", "launch", *args, "--plain", "--poll", "0.3"],
        cwd=tmp_path,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait(pred, what: str, limit_s: float = 120) -> None:
    deadline = time.monotonic() + limit_s
    while not pred():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _events(folder: Path) -> list[dict]:
    try:
        return [json.loads(x) for x in (folder / "attempts.jsonl").read_text().splitlines()]
    except FileNotFoundError:
        return []


def _probed(log: Path, step: int, metric: str) -> bool:
    if not log.exists():
        return False
    for line in log.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("step") == step and metric in json.dumps(rec):
            return True
    return False


def _kill_left(folder: Path, script: str) -> None:
    """What a failed stop left running: each attempt's group, its own pid checked."""
    for e in _events(folder):
        if e["event"] != "begin":
            continue
        try:
            if any(script in a for a in psutil.Process(e["pid"]).cmdline()):
                os.killpg(e["pid"], signal.SIGKILL)
        except (psutil.NoSuchProcess, ProcessLookupError):
            pass


def _stopped_past(tmp_path: Path, folder: Path, script: str, step: int, metric: str, *launch):
    """Launch under `launch --plain`, stop it by `fontaine-tui stop` once `step` is probed."""
    watcher = _watched(tmp_path, *launch)
    log = folder / ("train_log.jsonl" if script == "fontaine_engine" else "metrics.jsonl")
    try:
        _wait(lambda: _probed(log, step, metric), "the endpoint was never probed", 240)
        time.sleep(1.0)  # the watcher has read it
        stop = _cli(tmp_path, "stop", str(folder), "--yes")
        said, _ = watcher.communicate(timeout=180)
    finally:
        if watcher.poll() is None:
            watcher.kill()
        _kill_left(folder, script)
    assert stop.returncode == 0, stop.stdout + stop.stderr
    ends = [(e["event"], e.get("cause")) for e in _events(folder)]
    assert ends == [("begin", None), ("stop", None), ("end", "stopped")], (ends, said[-3000:])
    return said


def _refused(tmp_path: Path, folder: Path, registry: Path, script: str, *launch: str) -> str:
    before = snapshot(folder, registry.parent)
    try:
        again = _cli(tmp_path, "launch", *launch, "--resume", "--plain", "--poll", "0.3")
    finally:  # a resume that went ahead leaves its trainer running
        _kill_left(folder, script)
    assert again.returncode == 2, again.stdout + again.stderr
    assert again.stdout == "", again.stdout
    assert again.stderr.count("\n") == 1 and "nothing to resume" in again.stderr, again.stderr
    assert snapshot(folder, registry.parent) == before  # nothing written, nothing started
    return again.stderr


def test_a_command_stopped_past_its_endpoint_is_not_resumed(tmp_path, registry_path):
    (tmp_path / "trainer.py").write_text(TRAINER)
    argv = f'"{sys.executable}", "{tmp_path / "trainer.py"}", "{{output_dir}}"'
    (tmp_path / "past.toml").write_text(f"""[run]
name = "past"
output_dir = "runs/past"
[command]
argv = [{argv}]
resume_argv = [{argv}]
[source]
kind = "jsonl"
eval_every = 10
[verdict]
metric = "eval_loss"
anchor_step = 10
endpoint_step = 40
healthy_max = 0.0
drift_min = 0.2
""")
    folder = tmp_path / "runs" / "past"
    _stopped_past(tmp_path, folder, "trainer.py", 40, "eval_loss", "./past.toml")
    said = _refused(tmp_path, folder, registry_path, "trainer.py", "./past.toml")
    assert "attempt 1 stopped at step" in said and "endpoint in force, step 40" in said, said


@pytest.mark.engine
@pytest.mark.usefixtures("corpus_dir")
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the engine needs torch")
def test_an_engine_stopped_past_its_endpoint_is_not_resumed(tmp_path, registry_path):
    text = (ROOT / "presets" / "smoke.toml").read_text()
    for old, new in (
        ("\nsteps = 40\n", "\nsteps = 60\n"),
        ("\nanchor_step = 20\n", "\nanchor_step = 10\n"),
        ("\ndeclared_before_step = 20\n", "\ndeclared_before_step = 10\n"),
        ("\nendpoint_step = 40\n", "\nendpoint_step = 20\n"),
        ("\nsave_every = 20\n", "\nsave_every = 10\n"),
    ):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (tmp_path / "smoke.toml").write_text(text)
    folder = tmp_path / "run"
    launch = ("./smoke.toml", "--output-dir", "run")
    _stopped_past(tmp_path, folder, "fontaine_engine", 20, "eval_chunk_mae", *launch)
    said = _refused(tmp_path, folder, registry_path, "fontaine_engine", *launch)
    assert "attempt 1 stopped at step" in said and "endpoint in force, step 20" in said, said
