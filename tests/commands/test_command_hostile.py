"""A launched [command] against a hostile user's inputs: credentials in argv, env values and
a launcher's platform delta never reach prereg.json or the output; a run folder that holds
a log already is refused; links planted under the console's own file names are never
written through; a command killed by SIGKILL is noted as killed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FAKE = """import json, os, signal, sys
print("training", flush=True)
out = os.environ["FONTAINE_OUTPUT_DIR"]
with open(os.path.join(out, "metrics.jsonl"), "a") as fh:
    for s in range(1, 41):
        rec = {"step": s, "loss": 2.0 - s / 40}
        if s % 10 == 0:
            rec["eval_loss"] = 1.8 - s / 100
        fh.write(json.dumps(rec) + "\\n")
        fh.flush()
        if sys.argv[1:] == ["kill"] and s == 30:
            os.kill(os.getpid(), signal.SIGKILL)
"""


def _preset(tmp_path: Path, command: str, name: str = "fake") -> Path:
    (tmp_path / "fake.py").write_text(FAKE)
    path = tmp_path / f"{name}.toml"
    path.write_text(f'''[run]
name = "{name}"
output_dir = "runs/{name}"
[command]
{command}
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


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "FONTAINE_NOTIFY"}
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


ARGV = f'argv = ["{sys.executable}", "fake.py"]'


@pytest.mark.parametrize(
    "command, key",
    [
        (f'argv = ["{sys.executable}", "fake.py", "--hub_token=abcdef123456"]', "command.argv[2]"),
        (
            f'argv = ["{sys.executable}", "fake.py", "--hub-token", "abcdef123456"]',
            "command.argv[3]",
        ),
        (f'argv = ["{sys.executable}", "fake.py", "hf_abcdefghijklmnop"]', "command.argv[2]"),
        (f'{ARGV}\nenv = {{ HFTOKEN = "x" }}', "command.env.HFTOKEN"),
        (f'{ARGV}\nenv = {{ GH_PAT = "x" }}', "command.env.GH_PAT"),
        (f'{ARGV}\nenv = {{ DB = "postgres://me:pw@host/db" }}', "command.env.DB"),
    ],
)
def test_a_credential_in_the_command_is_refused_and_never_shown(
    tmp_path, command, key, registry_path
):
    res = _cli(tmp_path, "launch", str(_preset(tmp_path, command)), "--plain")
    assert res.returncode == 2, res.stdout + res.stderr
    assert key in res.stderr and "looks like a secret" in res.stderr, res.stderr
    for secret in ("abcdef123456", "hf_abcdefghijklmnop", "me:pw"):
        assert secret not in res.stderr + res.stdout
    assert not (tmp_path / "runs").exists()


def test_a_launchers_platform_delta_keeps_no_credential(tmp_path, registry_path):
    mark = "# ---- command block ----"
    block = f"{sys.executable} fake.py\n"
    (tmp_path / "ref.sh").write_text(f"#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=0\n{mark}\n{block}")
    (tmp_path / "box.sh").write_text(
        "#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=1\n"
        f"export HF_TOKEN=hf_PLATFORMSECRET999\n{mark}\n{block}"
    )
    preset = _preset(
        tmp_path, f'script = "box.sh"\nblock_reference = "ref.sh"\nblock_marker = "{mark}"'
    )
    res = _cli(tmp_path, "launch", str(preset), "--plain")
    assert res.returncode == 0, res.stdout + res.stderr
    prereg = (tmp_path / "runs" / "fake" / "prereg.json").read_text()
    delta = json.loads(prereg)["provenance"]["platform_delta"]
    assert "+export HF_TOKEN=***" in delta and "+export CUDA_VISIBLE_DEVICES=1" in delta
    for text in (
        prereg,
        res.stdout,
        res.stderr,
        (tmp_path / "runs" / "fake" / "verdict.json").read_text(),
    ):
        assert "PLATFORMSECRET" not in text


def test_a_token_anywhere_in_the_preset_refuses_the_launch_before_prereg(tmp_path, registry_path):
    preset = _preset(tmp_path, ARGV)
    text = preset.read_text().replace(
        'name = "fake"\n',
        'name = "fake"\nquestion = "asked with \\u0068f_QwErTyUiOpAsDfGhJkLz01"\n',
    )
    preset.write_text(text)
    res = _cli(tmp_path, "launch", str(preset), "--plain")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "run.question" in res.stderr and "credential" in res.stderr, res.stderr
    assert "QwErTyUiOp" not in res.stdout + res.stderr
    assert not (tmp_path / "runs" / "fake" / "prereg.json").exists()


def test_a_folder_holding_a_log_already_is_refused(tmp_path, registry_path):
    folder = tmp_path / "runs" / "fake"
    folder.mkdir(parents=True)
    (folder / "notes.jsonl").write_text('{"step": 1, "loss": 1}\n')
    res = _cli(tmp_path, "launch", str(_preset(tmp_path, ARGV)), "--plain")
    assert res.returncode == 2 and "already holds a jsonl log (notes.jsonl)" in res.stderr, (
        res.stderr
    )
    assert sorted(p.name for p in folder.iterdir()) == ["notes.jsonl"]


@pytest.mark.parametrize("name", ["engine.out.log", "attempts.jsonl", "command.exits.jsonl"])
def test_a_link_under_the_consoles_file_names_is_never_written_through(
    tmp_path, name, registry_path
):
    folder = tmp_path / "runs" / "fake"
    folder.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("original\n")
    (folder / name).symlink_to(victim)
    _cli(tmp_path, "launch", str(_preset(tmp_path, ARGV)), "--plain")
    assert victim.read_text() == "original\n"


def test_a_command_killed_by_sigkill_is_noted_killed(tmp_path, registry_path):
    preset = _preset(tmp_path, f'argv = ["{sys.executable}", "fake.py", "kill"]')
    res = _cli(tmp_path, "launch", str(preset), "--plain")
    folder = tmp_path / "runs" / "fake"
    assert res.returncode == 1, res.stdout + res.stderr
    assert "command killed by SIGKILL at step 30" in res.stdout, res.stdout
    note = json.loads((folder / "command.exits.jsonl").read_text())
    assert note["signal"] == "SIGKILL" and note["code"] is None
    assert "Traceback" not in (folder / "engine.out.log").read_text()
    last = json.loads((folder / "attempts.jsonl").read_text().splitlines()[-1])
    assert last["cause"] == "killed", last


def test_attach_to_a_folder_of_several_runs_exits_2_as_verdict_does(tmp_path):
    folder = tmp_path / "two"
    folder.mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        (folder / name).write_text(
            "".join(json.dumps({"step": s, "eval_loss": 1.0}) + "\n" for s in (20, 40))
        )
    preset = tmp_path / "read.toml"
    preset.write_text(
        _preset(tmp_path, ARGV).read_text().split("[command]")[0]
        + '[source]\nkind = "jsonl"\n[verdict]\nmetric = "eval_loss"\n'
        "anchor_step = 20\nendpoint_step = 40\nhealthy_max = 0.0\n"
        "drift_min = 0.2\n"
    )
    verdict = _cli(tmp_path, "verdict", str(folder), "--preset", str(preset))
    attach = _cli(
        tmp_path, "attach", str(folder), "--plain", "--until-end", "--preset", str(preset)
    )
    assert verdict.returncode == attach.returncode == 2, attach.stdout + attach.stderr
    assert "2 runs (a.jsonl, b.jsonl)" in attach.stderr, attach.stderr
