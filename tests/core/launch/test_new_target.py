"""What a new launch target costs: one module, the shared sequence not repeated in it.

`K8sStandIn` is the whole of a new target (`--on k8s:NS`, standing in for a cluster that runs
the command here): it starts what it is given and says where. The exit note of a preset's own
[command], its handle's `who` and the telemetry recorder beside it are the launched run's
owner's (model/launched.py), so the run's history is recorded and a `stop` from another
process reads how the command ended: cause "stopped", never "unknown"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.host.recorder import MODULE as RECORDER
from fontaine_tui.core.launch.engine_argv import run_dir
from fontaine_tui.core.launch.launcher import EngineProcess
from fontaine_tui.core.launch.registry import Registry
from fontaine_tui.core.launch.targets.base import Request, Started
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import TELEMETRY, RunFolder
from fontaine_tui.model.launched import LaunchedRun

TRAINER = """import json, os, time
out = os.environ["FONTAINE_OUTPUT_DIR"]
step = 0
while True:
    step += 1
    with open(os.path.join(out, "metrics.jsonl"), "a") as fh:
        fh.write(json.dumps({"step": step, "loss": 1.0}) + "\\n")
    time.sleep(0.05)
"""


class K8sStandIn:
    """`--on k8s:NAMESPACE`: the run's command started under the namespace's name."""

    remote = False
    starts_here = True  # its process runs on this host

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.host = hostname()

    def folder(self, req: Request) -> RunFolder:
        return RunFolder(run_dir(req.preset, req.output_dir).resolve())

    def check(self, req: Request, folder: RunFolder) -> list:
        return []

    def prepare(self, req: Request, folder: RunFolder, argv: list[str]) -> dict[str, object]:
        folder.root.mkdir(parents=True, exist_ok=True)
        return {"k8s": {"namespace": self.namespace}}

    def start(self, req: Request, folder: RunFolder | None, argv: list[str], maker) -> Started:
        assert folder is not None
        env, cwd = maker.env(req.preset, folder.root), maker.cwd(req.preset, folder.root)
        handle = EngineProcess.start(argv, folder, env=env, cwd=cwd)
        return Started(handle, str(folder.root), handle.pid, handle.started or 0.0)

    def abandon(self, folder: RunFolder) -> None:
        pass

    def unregistered(self, started: Started) -> str | None:
        return None

    def said(self, req: Request, started: Started, sha: str, launched_at: str) -> str:
        return f"launched {req.preset.name} in k8s:{self.namespace}"

    def where(self, started: Started) -> tuple[str, str]:
        return started.run_dir, f"pod of pid {started.pid} in {self.namespace}"

    def hint(self, started: Started) -> str:
        return f"  watch it: fontaine-tui attach {started.run_dir}"


def _preset(tmp_path: Path) -> Path:
    (tmp_path / "trainer.py").write_text(TRAINER)
    path = tmp_path / "k8s.toml"
    path.write_text(f'''[run]
name = "k8s"
output_dir = "runs/k8s"
[command]
argv = ["{sys.executable}", "{tmp_path / "trainer.py"}"]
[source]
kind = "jsonl"
[verdict]
metric = "eval_loss"
anchor_step = 20
endpoint_step = 40
healthy_max = 0.0
drift_min = 0.2
''')
    return path


def _recorders(folder: Path) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if RECORDER in cmd and str(folder) in cmd:
            found.append(p)
    return found


def test_a_new_targets_command_stopped_from_outside_ends_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FONTAINE_TELEMETRY_S", "0.5")
    folder = RunFolder(tmp_path / "run")
    run = LaunchedRun.launch(
        K8sStandIn("ns"),
        load_preset(str(_preset(tmp_path))),
        output_dir=str(folder.root),
        registry=Registry(),
    )
    try:
        assert run.handle.who == "command"  # the owner's duty, not the target's
        deadline = time.monotonic() + 30
        while not (folder.root / "metrics.jsonl").exists():  # the command is training
            assert time.monotonic() < deadline and run.handle.poll() is None
            time.sleep(0.05)
        while not (folder.root / TELEMETRY).exists():  # its history, as a local run's
            assert time.monotonic() < deadline, "no telemetry recorded"
            time.sleep(0.05)
        stop = subprocess.run(  # another process: the command is not its child
            [sys.executable, "-m", "fontaine_tui", "stop", str(folder.root), "--yes", "--json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={k: v for k, v in os.environ.items() if k != "FONTAINE_NOTIFY"},
        )
        assert stop.returncode == 0, stop.stderr
    finally:
        if run.handle.poll() is None:
            run.handle.stop()
    lines = [json.loads(x) for x in folder.attempts.read_text().splitlines()]
    end = lines[-1]
    assert (end["event"], end["cause"], end["signal"]) == ("end", "stopped", "SIGINT"), end
    assert json.loads(stop.stdout.splitlines()[-1])["signal"] == "SIGINT", stop.stdout
    deadline = time.monotonic() + 30
    while _recorders(folder.root):  # the recorder ends with the run
        assert time.monotonic() < deadline, "the recorder outlived the run"
        time.sleep(0.1)
