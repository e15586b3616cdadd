"""A [command] preset whose [source] path names {output_dir}: launched for real with
`launch --plain`, its trainer's log read where the trainer wrote it (the run folder, filled
in at launch), to its end and the right verdict; and `doctor` on the mistakes it must say
before a launch (an unknown placeholder, a script that is not there)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# a trainer of its own: a JSONL log under the folder given, a flat eval loss (HEALTHY)
TRAINER = """\
import argparse, json, math, os, time
p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=200)
a = p.parse_args()
assert os.path.isabs(a.out), a.out
os.makedirs(os.path.join(a.out, "logs"), exist_ok=True)
with open(os.path.join(a.out, "logs", "train.jsonl"), "a") as f:
    for step in range(1, a.steps + 1):
        line = {"step": step, "train/loss": 2.0 * math.exp(-step / 50) + 0.1}
        if step % 50 == 0:
            line["eval/loss"] = 0.9
        f.write(json.dumps(line) + "\\n")
        f.flush()
        time.sleep(0.005)
"""


def _preset(
    tmp_path: Path, path: str = "{output_dir}/logs/train.jsonl", script: str = "train.py"
) -> Path:
    (tmp_path / "train.py").write_text(TRAINER)
    preset = tmp_path / "own_jsonl.toml"
    preset.write_text(f"""[run]
name = "own_jsonl"
output_dir = "runs/own"

[command]
argv = ["{sys.executable}", "{script}", "--out", "{{output_dir}}", "--steps", "200"]

[source]
kind = "jsonl"
path = "{path}"
eval_every = 50

[verdict]
metric = "eval/loss"
anchor_step = 50
endpoint_step = 200
healthy_max = 0.05
drift_min = 0.5
""")
    return preset


def _cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
    )


def test_a_source_path_under_output_dir_is_read_to_its_end(tmp_path, registry_path):
    preset = _preset(tmp_path)
    doctor = _cli("doctor", str(preset), cwd=tmp_path)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "engine" not in doctor.stdout, doctor.stdout  # the user's trainer is the command
    assert f"\ncommand: {sys.executable} train.py --out " in doctor.stdout, doctor.stdout

    res = _cli("launch", str(preset), "--plain", cwd=tmp_path, timeout=180)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]  # HEALTHY, final
    assert "ended early" not in out, out[-3000:]
    assert "command finished at step 200, exit 0" in res.stdout, out[-3000:]
    assert "VERDICT: HEALTHY  [final]" in res.stdout, out[-3000:]

    folder = (tmp_path / "runs" / "own").resolve()
    log = folder / "logs" / "train.jsonl"
    assert log.is_file()
    prereg = json.loads((folder / "prereg.json").read_text())
    assert prereg["provenance"]["source"] == {"path": str(log)}  # the real path, frozen
    assert prereg["preset"]["source"]["path"] == "{output_dir}/logs/train.jsonl"  # as hashed

    # every later reader reads the path frozen at launch
    verdict = _cli("verdict", str(folder), "--json", cwd=tmp_path)
    assert verdict.returncode == 0, verdict.stdout + verdict.stderr
    read = json.loads(verdict.stdout)
    assert read["label"] == "HEALTHY" and not read["provisional"], read
    runs = _cli("runs", "--json", cwd=tmp_path)
    rows = [json.loads(x) for x in runs.stdout.splitlines() if x.strip()]
    row = next(r for r in rows if r.get("name") == "own_jsonl")
    assert row["state"] == "finished" and row["step"] == 200, row


def test_doctor_and_launch_refuse_an_unknown_placeholder_in_the_source_path(
    tmp_path, registry_path
):
    preset = _preset(tmp_path, path="{run_dir}/logs/train.jsonl")
    for args in (("doctor", str(preset)), ("launch", str(preset), "--plain")):
        res = _cli(*args, cwd=tmp_path)
        assert res.returncode == 2, res.stdout + res.stderr
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1, res.stderr
        assert str(preset) in lines[0] and "source.path" in lines[0], lines[0]
        assert "{output_dir}" in lines[0] and "{run_dir}" in lines[0], lines[0]
    assert not (tmp_path / "runs").exists()  # nothing frozen, no folder made


def test_doctor_says_which_script_argv_names_is_missing(tmp_path, registry_path):
    preset = _preset(tmp_path, script="trian.py")
    res = _cli("doctor", str(preset), cwd=tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "ok  command" not in res.stdout.replace("    ", " "), res.stdout
    said = [line for line in res.stdout.splitlines() if "trian.py" in line and "refuse" in line]
    assert len(said) == 1, res.stdout
    assert "command.argv[1]" in said[0] and str(tmp_path / "trian.py") in said[0], said[0]
    assert "no file" in said[0], said[0]
