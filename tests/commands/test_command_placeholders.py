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
    assert prereg["provenance"]["source"] == {"path": "logs/train.jsonl"}  # in the run folder
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


def test_doctor_and_launch_refuse_a_source_path_leaving_output_dir(tmp_path, registry_path):
    """{output_dir}/../other/... names another run's folder: read as a shared store it would
    skip the stale-log guard, and a trainer that dies at once would be judged by the other
    run's log. It is refused before anything is frozen."""
    other = tmp_path / "runs" / "other" / "logs" / "train.jsonl"
    other.parent.mkdir(parents=True)
    rows = [
        {"step": s, "train/loss": 0.5, **({"eval/loss": 0.01} if s % 50 == 0 else {})}
        for s in range(1, 201)
    ]
    other.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "train.py").write_text("raise SystemExit('dies at import')\n")
    for path in ("{output_dir}/../other/logs/train.jsonl", "{output_dir}/logs/../../x.jsonl"):
        preset = _preset(tmp_path, path=path)
        (tmp_path / "train.py").write_text("raise SystemExit('dies at import')\n")
        for args in (("doctor", str(preset)), ("launch", str(preset), "--plain")):
            res = _cli(*args, cwd=tmp_path, timeout=180)
            out = res.stdout + res.stderr
            assert res.returncode == 2, (path, args, out[-3000:])
            lines = res.stderr.strip().splitlines()
            assert len(lines) == 1, (path, args, res.stderr)
            assert str(preset) in lines[0] and "source.path" in lines[0], lines[0]
            assert "VERDICT" not in out, (path, args, out[-3000:])
        assert not (tmp_path / "runs" / "own").exists(), path  # nothing frozen, no folder made


def test_doctor_says_which_script_argv_names_is_missing(tmp_path, registry_path):
    preset = _preset(tmp_path, script="trian.py")
    res = _cli("doctor", str(preset), cwd=tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "ok  command" not in res.stdout.replace("    ", " "), res.stdout
    said = [line for line in res.stdout.splitlines() if "trian.py" in line and "refuse" in line]
    assert len(said) == 1, res.stdout
    assert "command.argv[1]" in said[0] and str(tmp_path / "trian.py") in said[0], said[0]
    assert "no file" in said[0], said[0]


def _argv_preset(tmp_path: Path, argv: list[str]) -> Path:
    """The preset of `_preset` with its argv replaced by `argv` (placeholders as written)."""
    preset = _preset(tmp_path)
    text = preset.read_text()
    start = text.index("argv = ")
    end = text.index("\n", start)
    preset.write_text(text[:start] + f"argv = {json.dumps(argv)}" + text[end:])
    return preset


def _src(tmp_path: Path) -> None:
    """src/train.py, and src/pkgdir, a folder that Python runs by its __main__.py."""
    (tmp_path / "src" / "pkgdir").mkdir(parents=True)
    (tmp_path / "src" / "train.py").write_text(TRAINER)
    (tmp_path / "src" / "pkgdir" / "__main__.py").write_text("print('hi')\n")
    (tmp_path / "pkgdir").mkdir()
    (tmp_path / "pkgdir" / "__main__.py").write_text("print('hi')\n")


def test_doctor_looks_only_for_the_interpreters_own_script(tmp_path, registry_path):
    # each argv runs a script that is there; the other arguments ending in .py are a shell
    # line, an option's value or output files, which no check may take for a script
    _src(tmp_path)
    py = sys.executable
    for argv in (
        ["bash", "-c", "cd src && python train.py"],
        [py, "src/train.py", "--export-script", "exported_model.py", "--out", "{output_dir}"],
        [py, "src/train.py", "--config=conf/extra.py", "--out", "{output_dir}"],
        [py, "src/pkgdir"],
        [py, "-m", "pkgdir", "--save", "out.py"],
        [py, "-u", "-X", "dev", "src/train.py", "--out", "{output_dir}", "x.py"],
    ):
        preset = _argv_preset(tmp_path, argv)
        res = _cli("doctor", str(preset), cwd=tmp_path)
        said = [line for line in res.stdout.splitlines() if "no file" in line]
        assert not said, (argv, res.stdout)
        assert "ok  command" in res.stdout.replace("    ", " "), (argv, res.stdout)


def test_doctor_still_refuses_a_missing_interpreter_script(tmp_path, registry_path):
    _src(tmp_path)
    for argv, i, missing in (
        ([sys.executable, "-u", "src/trian.py", "--out", "{output_dir}"], 2, "src/trian.py"),
        (["bash", "-e", "run.sh", "x"], 2, "run.sh"),
        ([sys.executable, "src/nodir"], 1, "src/nodir"),
    ):
        preset = _argv_preset(tmp_path, argv)
        res = _cli("doctor", str(preset), cwd=tmp_path)
        assert res.returncode == 1, (argv, res.stdout + res.stderr)
        said = [s for s in res.stdout.splitlines() if "no file" in s and s.startswith("refuse ")]
        assert len(said) == 1, (argv, res.stdout)
        assert f"command.argv[{i}]" in said[0] and str(tmp_path / missing) in said[0], said[0]


def test_a_copied_or_moved_run_is_read_from_its_own_folder(tmp_path, registry_path):
    """{output_dir} is the run folder: a copy, or the folder moved, is read from itself, not
    from the path the launch filled in (where a new run launched at the old name writes)."""
    preset = _preset(tmp_path)
    first = _cli("launch", str(preset), "--plain", cwd=tmp_path, timeout=180)
    assert "VERDICT: HEALTHY  [final]" in first.stdout, (first.stdout + first.stderr)[-3000:]
    runs = tmp_path / "runs"
    subprocess.run(["cp", "-r", str(runs / "own"), str(tmp_path / "archive-own")], check=True)
    (runs / "own").rename(runs / "own-moved")
    # a new run at the old name whose eval loss climbs: not HEALTHY
    (tmp_path / "train.py").write_text(
        TRAINER.replace('line["eval/loss"] = 0.9', 'line["eval/loss"] = 0.9 * step / 50')
    )
    second = _cli("launch", str(preset), "--plain", cwd=tmp_path, timeout=180)
    assert "command finished at step 200" in second.stdout, (second.stdout + second.stderr)[-3000:]
    assert "VERDICT: HEALTHY" not in second.stdout, second.stdout[-3000:]

    labels = {}
    for folder in ("archive-own", "runs/own-moved", "runs/own"):
        res = _cli("verdict", folder, "--json", cwd=tmp_path)
        assert res.stdout.strip(), res.stderr
        labels[folder] = json.loads(res.stdout)["label"]
    assert labels["archive-own"] == "HEALTHY", labels
    assert labels["runs/own-moved"] == "HEALTHY", labels
    assert labels["runs/own"] != "HEALTHY", labels


def test_a_stale_log_at_an_output_dir_source_path_refuses_the_launch(tmp_path, registry_path):
    """A fresh folder holding an earlier trainer's log where {output_dir}/logs/train.jsonl
    points is refused, as the same path written without {output_dir} is: a trainer that dies
    at once would otherwise be judged by the stale log."""
    stale = tmp_path / "runs" / "own" / "logs" / "train.jsonl"
    stale.parent.mkdir(parents=True)
    rows = [
        {"step": s, "train/loss": 0.5, **({"eval/loss": 0.9} if s % 50 == 0 else {})}
        for s in range(1, 201)
    ]
    stale.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for path in ("logs/train.jsonl", "{output_dir}/logs/train.jsonl"):
        preset = _preset(tmp_path, path=path)
        (tmp_path / "train.py").write_text("raise SystemExit('dies at import')\n")
        res = _cli("launch", str(preset), "--plain", cwd=tmp_path, timeout=180)
        out = res.stdout + res.stderr
        assert res.returncode == 2, (path, out[-3000:])
        assert "already holds a jsonl log (logs/train.jsonl)" in res.stderr, (path, out[-3000:])
        assert "VERDICT" not in out, (path, out[-3000:])
        assert not (tmp_path / "runs" / "own" / "prereg.json").exists(), path
