"""`fontaine-tui stop` of a [command] run that already ended, and a stop made while
`launch --plain` watches the run.

A run already ended keeps the cause recorded for it: a second `stop` says it ended (its
cause and step), exits 0, and writes nothing (no stop line in attempts.jsonl, the registry
as it was). A run that crashed before anyone saw it is recorded as it ended, never as a
user's stop. A `stop` from another process while `launch --plain` watches is read by the
watcher from attempts.jsonl's stop line: "stopped", no ALERT, no incident, the registry
says stopped. Real subprocesses: the CLI, a Python trainer writing JSONL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from fontaine_tui.core.runs.registry import Registry

pytestmark = pytest.mark.slow
TRAINER = """import json, sys, time
from pathlib import Path
out = Path(sys.argv[1])
crash = len(sys.argv) > 2
out.mkdir(parents=True, exist_ok=True)
with open(out / "log.jsonl", "a") as f:
    for step in range(1, 100000):
        f.write(json.dumps({"step": step, "train/loss": 1.0 / step}) + "\\n")
        if step % 10 == 0:
            f.write(json.dumps({"step": step, "eval_loss": 0.5}) + "\\n")
        f.flush()
        if crash and step == 12:
            print("boom: the trainer failed", flush=True)
            sys.exit(1)
        time.sleep(0.05)
"""


def _preset(tmp_path: Path, name: str, crash: bool = False) -> Path:
    (tmp_path / "trainer.py").write_text(TRAINER)
    extra = ', "crash"' if crash else ""
    path = tmp_path / f"{name}.toml"
    path.write_text(f"""[run]
name = "{name}"
output_dir = "runs/{name}"

[command]
argv = ["{sys.executable}", "{tmp_path / "trainer.py"}", "{{output_dir}}"{extra}]

[source]
kind = "jsonl"
eval_every = 10

[verdict]
metric = "eval_loss"
anchor_step = 10
endpoint_step = 60000
healthy_max = 0.3
drift_min = 1.0
""")
    return path


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "FONTAINE_NOTIFY"}
    env.update(PYTHONUNBUFFERED="1", XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    return env


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=180,
    )


def _wait(pred, what: str) -> None:
    deadline = time.monotonic() + 60
    while not pred():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _logged(folder: Path) -> bool:
    log = folder / "log.jsonl"
    return log.exists() and b"eval_loss" in log.read_bytes()


def _kill(pid: int) -> None:
    """The trainer's group, where a failed stop left it running (its own pid, checked)."""
    try:
        if any("trainer.py" in a for a in psutil.Process(pid).cmdline()):
            os.killpg(pid, signal.SIGKILL)
    except (psutil.NoSuchProcess, ProcessLookupError):
        pass


def _events(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "attempts.jsonl").read_text().splitlines()]


def _state(tmp_path: Path, name: str) -> str:
    res = _cli(tmp_path, "runs", "--json")
    assert res.returncode == 0, res.stderr
    rows = [json.loads(x) for x in res.stdout.splitlines() if x.strip()]
    [row] = [r for r in rows if r.get("name") == name]
    return row["state"]


def test_a_second_stop_keeps_the_first_and_writes_nothing(tmp_path, registry_path):
    res = _cli(tmp_path, "launch", str(_preset(tmp_path, "l2")), "--detach", "-j")
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    folder = Path(doc["run_dir"])
    try:
        _wait(lambda: _logged(folder), "the trainer never logged a probe")
        first = _cli(tmp_path, "stop", "runs/l2", "--yes")
    finally:
        _kill(doc["pid"])
    assert first.returncode == 0, first.stdout + first.stderr
    assert "command stopped by SIGINT at step" in first.stdout, first.stdout
    assert _state(tmp_path, "l2") == "stopped"
    kept = (folder / "attempts.jsonl").read_bytes()
    entry = Registry(registry_path).entries()

    again = _cli(tmp_path, "stop", "runs/l2", "--yes")
    assert again.returncode == 0, again.stdout + again.stderr
    step = entry[0].last_step
    assert f"already ended (stopped at step {step})" in again.stdout, again.stdout
    assert "killed" not in again.stdout + again.stderr, again.stdout + again.stderr
    assert "user's stop" not in again.stdout + again.stderr, again.stderr
    as_json = _cli(tmp_path, "stop", "runs/l2", "--yes", "--json")
    assert as_json.returncode == 0, as_json.stdout + as_json.stderr
    out = json.loads(as_json.stdout.strip().splitlines()[-1])
    assert (out["cause"], out["status"], out["last_step"]) == ("stopped", "stopped", step), out
    assert (folder / "attempts.jsonl").read_bytes() == kept
    assert Registry(registry_path).entries() == entry
    assert _state(tmp_path, "l2") == "stopped"


def test_a_run_that_crashed_is_not_recorded_as_a_users_stop(tmp_path, registry_path):
    preset = _preset(tmp_path, "l3", crash=True)
    res = _cli(tmp_path, "launch", str(preset), "--detach", "-j")
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    folder = Path(doc["run_dir"])
    try:
        _wait(lambda: not psutil.pid_exists(doc["pid"]), "the trainer never crashed")
    finally:
        _kill(doc["pid"])
    stop = _cli(tmp_path, "stop", "runs/l3", "--yes")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert "already ended (crashed at step 12)" in stop.stdout, stop.stdout
    assert "user's stop" not in stop.stdout + stop.stderr, stop.stderr
    assert [e["event"] for e in _events(folder)] == ["begin", "end"]
    assert _events(folder)[-1]["cause"] == "crashed"
    assert _state(tmp_path, "l3") == "failed"
    kept = (folder / "attempts.jsonl").read_bytes()
    again = _cli(tmp_path, "stop", "runs/l3", "--yes")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "already ended (crashed at step 12)" in again.stdout, again.stdout
    assert (folder / "attempts.jsonl").read_bytes() == kept
    assert _state(tmp_path, "l3") == "failed"


def test_a_stop_from_outside_is_read_by_the_plain_watcher_as_a_stop(tmp_path, registry_path):
    preset = _preset(tmp_path, "l4")
    folder = tmp_path / "runs" / "l4"
    watcher = subprocess.Popen(
        [sys.executable, "-m", "fontaine_tui", "launch", str(preset), "--plain", "--poll", "0.3"],
        cwd=tmp_path,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        _wait(lambda: _logged(folder), "the trainer never logged a probe")
        time.sleep(0.5)  # the watcher has read it
        stop = _cli(tmp_path, "stop", "runs/l4", "--yes", "--json")
        said, _ = watcher.communicate(timeout=120)
    finally:
        if watcher.poll() is None:
            watcher.kill()
        for e in _events(folder):
            if e["event"] == "begin":
                _kill(e["pid"])
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert json.loads(stop.stdout.strip().splitlines()[-1])["cause"] == "stopped", stop.stdout
    assert "command stopped by SIGINT at step" in said, said[-3000:]
    assert "ALERT" not in said and "killed" not in said, said[-3000:]
    ends = [e for e in _events(folder) if e["event"] == "end"]
    assert [e["cause"] for e in ends] == ["stopped"], ends
    assert _state(tmp_path, "l4") == "stopped"
