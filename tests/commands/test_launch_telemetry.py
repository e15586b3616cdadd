"""A detached launch keeps its telemetry history with no console open, and ends it with the run.

A [command] run (a small trainer with a worker process, writing its JSONL log for a few
seconds) is launched with `--detach`: nothing of this program runs but the recorder beside it,
which samples the run's process tree into telemetry.jsonl and exits when the run does."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil

from fontaine_tui.core.host.recorder import MODULE


def pid_running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def recorders_of(folder: Path) -> list[int]:
    """The recorder processes writing into `folder`."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if MODULE in cmd and str(folder) in cmd:
            found.append(p.pid)
    return found


TRAINER = """import json, subprocess, sys, time
from pathlib import Path
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
out = Path(sys.argv[1])
with open(out / "log.jsonl", "a") as f:
    for step in range(1, 31):
        time.sleep(0.1)
        f.write(json.dumps({"step": step, "train/loss": 1.0 / step}) + "\\n")
        f.flush()
worker.kill()
"""


def preset(tmp_path: Path) -> Path:
    (tmp_path / "trainer.py").write_text(TRAINER)
    path = tmp_path / "cmd_tel.toml"
    path.write_text(f"""[run]
name = "cmd_tel"
output_dir = "run"

[command]
argv = ["{sys.executable}", "{tmp_path / "trainer.py"}", "{{output_dir}}"]

[source]
kind = "jsonl"
eval_every = 10

[verdict]
metric = "eval/chunk_mae"
anchor_step = 10
endpoint_step = 30
healthy_max = 50.0
drift_min = 100.0
""")
    return path


def test_a_detached_run_records_its_history_and_its_recorder_ends_with_it(
    tmp_path: Path, registry_path: Path
) -> None:
    env = {**os.environ, "FONTAINE_TELEMETRY_S": "0.5", "HF_HUB_OFFLINE": "1"}
    env.pop("FONTAINE_NOTIFY", None)
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "launch", str(preset(tmp_path)), "--detach"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    pid = int(re.search(r"command pid (\d+)", res.stdout).group(1))
    folder = (tmp_path / "run").resolve()  # a [command]'s folder: its {output_dir}
    assert recorders_of(folder), "no recorder beside the engine"
    deadline = time.monotonic() + 60
    while pid_running(pid):
        assert time.monotonic() < deadline, "the engine did not end"
        time.sleep(0.2)
    ended = time.monotonic()
    while recorders_of(folder):
        assert time.monotonic() - ended < 5, "the recorder outlived the run"
        time.sleep(0.1)
    lines = [json.loads(line) for line in (folder / "telemetry.jsonl").read_text().splitlines()]
    assert len(lines) >= 3
    engines = [line["engine"] for line in lines if line["engine"] is not None]
    assert engines and all(e["pid"] == pid and e["mem_kind"] == "PSS" for e in engines)
    # a process holds memory while it runs; the last sample may catch it ending (0)
    assert all(e["mem"] > 0 for e in engines[:-1]), engines
    assert max(e["procs"] for e in engines) >= 2  # the run's tree: the trainer and its worker
    assert all(line["step"] is None for line in lines)  # no train_log.jsonl: no step, no guess
