"""A user's own trainer launched end to end: `launch` of a [command] preset (the example
transformers Trainer script), seen running in `runs` with its step, stopped by `stop`, its
exit noted (core/exitnote.py) although it was detached, then `launch --resume` through
`resume_argv` to its final verdict and exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRAIN = str(ROOT / "examples" / "own_trainer" / "train.py")


def _preset(tmp_path: Path) -> Path:
    common = (
        f'"{sys.executable}", "{TRAIN}", "--output_dir", "{{output_dir}}", '
        '"--max_steps", "100", "--eval_every", "25"'
    )
    path = tmp_path / "own_cmd.toml"
    path.write_text(f"""[run]
name = "own_cmd"
output_dir = "runs/own"

[command]
argv = [{common}, "--pause", "0.15"]
resume_argv = [{common}, "--resume_from_checkpoint", "true"]
env = {{ HF_HUB_OFFLINE = "1" }}

[source]
kind = "hf_trainer"
eval_every = 25

[verdict]
metric = "eval_loss"
anchor_step = 50
endpoint_step = 100
healthy_max = 0.0
drift_min = 0.2
""")
    return path


def _cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def _row(cwd: Path) -> dict:
    res = _cli("runs", "--json", cwd=cwd)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    rows = [r for r in rows if r.get("name") == "own_cmd"]
    assert len(rows) == 1, res.stdout
    return rows[0]


@pytest.mark.slow
def test_a_launched_command_is_watched_stopped_and_resumed(tmp_path, registry_path):
    pytest.importorskip("transformers")
    preset = _preset(tmp_path)
    res = _cli("launch", str(preset), "--detach", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "launched own_cmd: command pid" in res.stdout
    folder = tmp_path / "runs" / "own"
    prov = json.loads((folder / "prereg.json").read_text())["provenance"]
    assert prov["command"]["argv"][1] == TRAIN and TRAIN in prov["files"]
    assert prov["code"]  # the git state of the script's checkout (or that there is none)

    deadline = time.monotonic() + 120  # running, with the step its own log says
    while not (folder / "checkpoint-25").is_dir():
        assert time.monotonic() < deadline, (folder / "engine.out.log").read_text()[-2000:]
        time.sleep(0.1)
    row = _row(tmp_path)
    assert row["state"] == "running" and row["step"] >= 10, row

    stop = _cli("stop", str(folder), "--yes", cwd=tmp_path)
    assert stop.returncode == 0, stop.stderr
    assert "command stopped by SIGINT at step" in stop.stdout, stop.stdout
    noted = [json.loads(x) for x in (folder / "command.exits.jsonl").read_text().splitlines()]
    assert noted[-1]["signal"] == "SIGINT" and noted[-1]["code"] is None
    ends = [json.loads(x) for x in (folder / "attempts.jsonl").read_text().splitlines()]
    assert ends[-1]["event"] == "end" and ends[-1]["cause"] == "stopped", ends[-1]
    assert _row(tmp_path)["state"] == "stopped"

    res = _cli("launch", str(preset), "--resume", "--plain", cwd=tmp_path, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr  # HEALTHY, final: 0
    assert "command finished at step 100, exit 0" in res.stdout, res.stdout[-2000:]
    assert "VERDICT: HEALTHY  [final]" in res.stdout
    argv = json.loads((folder / "prereg.json").read_text())["provenance"]["command"]["argv"]
    assert "--pause" in argv  # the frozen command is the launch's; the resume ran resume_argv
    ends = [json.loads(x) for x in (folder / "attempts.jsonl").read_text().splitlines()]
    assert [(e["event"], e.get("kind") or e.get("cause")) for e in ends] == [
        ("begin", "launch"),
        ("stop", None),  # the stop recorded before it was sent: no restart answers it
        ("end", "stopped"),
        ("begin", "resume"),
        ("end", "finished"),
    ]
    assert _row(tmp_path)["state"] == "finished"
    verdict = json.loads((folder / "verdict.json").read_text())
    assert verdict["label"] == "HEALTHY" and not verdict["provisional"]

    # banked as its frozen [source] reads it, ended by its finished attempt (no --ended)
    res = _cli("bank", "add", str(folder), "--as", "own_base", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "banked" in res.stdout and "(hf_trainer)" in res.stdout, res.stdout
    compare = tmp_path / "own_vs_base.toml"  # a second run, compared with the banked one
    compare.write_text(
        preset.read_text()
        .replace('name = "own_cmd"', 'name = "own_cmp"')
        .replace('output_dir = "runs/own"', 'output_dir = "runs/cmp"')
        .replace('"--pause", "0.15"', '"--seed", "1"')
        + '\n[comparators.base]\nbank = "own_base"\n'
    )
    res = _cli("launch", str(compare), "--plain", cwd=tmp_path, timeout=300)
    assert res.returncode == 0 and "VERDICT: HEALTHY" in res.stdout, res.stdout[-3000:]
    assert "base" in res.stdout.split("VERDICT:")[1], res.stdout[-3000:]
    ins = _cli("inspect", str(folder), "--json", cwd=tmp_path)
    assert ins.returncode == 0 and json.loads(ins.stdout)["format"]["kind"] == "hf_trainer", (
        ins.stdout
    )
