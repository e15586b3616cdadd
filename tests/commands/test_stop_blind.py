"""`fontaine-tui stop` of a blinded run whose trainer quotes the read in its last words.

A [command] trainer (a Python script writing JSONL, no engine) under a blind preset prints
`eval_loss=0.123` at each probe, and on SIGINT prints that it ran out of CUDA memory saving
its checkpoint, quoting the value again, and exits 1. `stop RUN --json` says how it ended,
judged from those words (cuda-oom), without them: the JSON is a surface like the plain line.
attempts.jsonl keeps them as printed. Stopped from another host (`stop NAME` of a run
launched there, through the real sshd on 127.0.0.1), the host's `stop --json` is read back
here: the cause is the one judged there from the words as printed, which never reach this
host, and the blind is the run's own prereg.json's, read where the stop runs. Without the
blind the words are kept. Real subprocesses."""

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

from fontaine_tui.core.run.attempts import read_attempts
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from tests.sshd_helper import HOST_ALIAS

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
VALUE = "0.123"
TRAINER = """import json, signal, sys, time
from pathlib import Path
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
def stopped(*_):
    print("CUDA out of memory saving the checkpoint: eval_loss=0.123", flush=True)
    sys.exit(1)
signal.signal(signal.SIGINT, stopped)
with open(out / "log.jsonl", "a") as f:
    for step in range(1, 100000):
        f.write(json.dumps({"step": step, "train/loss": 1.0 / step}) + "\\n")
        if step % 10 == 0:
            f.write(json.dumps({"step": step, "eval_loss": 0.123}) + "\\n")
            print("eval_loss=0.123", flush=True)
        f.flush()
        time.sleep(0.05)
"""


def cli(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def launched(there: Path, blind: bool) -> tuple[dict, dict[str, str]]:
    """The trainer launched with `launch --detach --json` in `there`, and its env there."""
    there.mkdir(parents=True)
    (there / "trainer.py").write_text(TRAINER)
    (there / "stopme.toml").write_text(f"""[run]
name = "stopme"
output_dir = "runs/stopme"

[command]
argv = ["{sys.executable}", "{there / "trainer.py"}", "{{output_dir}}"]

[source]
kind = "jsonl"
eval_every = 10

[verdict]
metric = "eval_loss"
anchor_step = 10
endpoint_step = 60000
healthy_max = 0.3
drift_min = 1.0
{"blind = true" if blind else ""}
""")
    env = {k: v for k, v in os.environ.items() if k != "FONTAINE_NOTIFY"}
    env.update(
        PYTHONUNBUFFERED="1",
        FONTAINE_REGISTRY=str(there / "state" / "babysit.toml"),
        XDG_CONFIG_HOME=str(there / "cfg"),
        XDG_STATE_HOME=str(there / "state"),
    )
    res = cli(there, env, "launch", "./stopme.toml", "--detach", "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    log = Path(doc["run_dir"]) / "log.jsonl"
    _wait(lambda: log.exists() and b"eval_loss" in log.read_bytes())
    return doc, env


def _wait(pred) -> None:
    deadline = time.monotonic() + 60
    while not pred():
        assert time.monotonic() < deadline, "the trainer never logged a probe"
        time.sleep(0.1)


def _kill(pid: int) -> None:
    """The trainer's group, where a failed stop left it running (its own pid, checked)."""
    try:
        if any("trainer.py" in a for a in psutil.Process(pid).cmdline()):
            os.killpg(pid, signal.SIGKILL)
    except (psutil.NoSuchProcess, ProcessLookupError):
        pass


def _kept(run_dir: str) -> None:
    """attempts.jsonl keeps the words as printed: the cause is judged from them."""
    attempt = read_attempts(RunFolder(Path(run_dir)))[-1]
    assert attempt.cause == "cuda-oom" and VALUE in attempt.detail, attempt


@pytest.mark.parametrize("blind", [True, False], ids=["blinded", "open"])
def test_stop_json_of_a_blinded_run_holds_none_of_its_last_words(tmp_path, blind):
    doc, env = launched(tmp_path / "there", blind)
    try:
        res = cli(tmp_path / "there", env, "stop", doc["run_dir"], "--yes", "--json")
    finally:
        _kill(doc["pid"])
    assert res.returncode == 0, res.stdout + res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert (out["cause"], out["status"]) == ("cuda-oom", "oom"), out
    assert out["describe"].startswith("command CUDA out of memory at step "), out
    _kept(doc["run_dir"])
    if not blind:
        assert out["output"] == out["cause_detail"] == out["oom_line"], out
        assert VALUE in out["output"] and VALUE in out["describe"], out
        return
    assert VALUE not in res.stdout + res.stderr, res.stdout
    assert out["output"].startswith("its words hold a number"), out
    assert out["cause_detail"].startswith("its words hold a number"), out


@pytest.mark.ssh
@pytest.mark.parametrize("json_out", [True, False], ids=["json", "plain"])
def test_a_stop_from_another_host_keeps_the_cause_judged_there(sshd, tmp_path, json_out):
    """The run launched on the host (this machine through the sshd, its own registry), the
    stop asked from here by the run's name: what comes back holds no value, its cause is
    the one judged there, and the registry here records it."""
    doc, there_env = launched(tmp_path / "there", True)
    here = tmp_path / "here"
    (here / "cfg" / "fontaine-tui").mkdir(parents=True)
    host_env = {"FONTAINE_REGISTRY": there_env["FONTAINE_REGISTRY"], "PYTHONUNBUFFERED": "1"}
    (here / "cfg" / "fontaine-tui" / "config.toml").write_text(
        f"[hosts.{HOST_ALIAS}]\nproject = {json.dumps(str(ROOT))}\n"
        f"python = {json.dumps(sys.executable)}\n"
        "env = {" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in host_env.items()) + "}\n"
    )
    registry = Registry(here / "state" / "babysit.toml")
    registry.upsert(
        Entry(
            "stopme",
            doc["run_dir"],
            HOST_ALIAS,
            pid=doc["pid"],
            pid_started=doc["pid_started"],
            status="running",
        )
    )
    env = {
        **there_env,
        "FONTAINE_REGISTRY": str(registry.path),
        "XDG_CONFIG_HOME": str(here / "cfg"),
        "XDG_STATE_HOME": str(here / "state"),
    }
    asked = ("--json",) if json_out else ()
    try:
        res = cli(here, env, "stop", "stopme", "--yes", *asked, "--ssh-config", str(sshd.config))
    finally:
        _kill(doc["pid"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert VALUE not in res.stdout + res.stderr, res.stdout + res.stderr
    [entry] = registry.entries()
    assert entry.status == "oom", entry
    _kept(doc["run_dir"])
    if json_out:
        out = json.loads(res.stdout.strip().splitlines()[-1])
        assert (out["cause"], out["status"]) == ("cuda-oom", "oom"), out
        assert out["cause_detail"].startswith("its words hold a number"), out
    else:
        [line] = res.stdout.strip().splitlines()
        assert line.startswith("command CUDA out of memory at step "), line
        assert ": its words hold a number" in line, line
