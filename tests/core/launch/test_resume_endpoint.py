"""A resume's endpoint in force, read from the ledger the verdict reads.

The engine's argv gains --extend-to N past the recipe's steps; a broken chain and a [command]
that cannot be told the new endpoint are refused through the real command line (one line, exit
2, nothing started); a resume_argv naming {endpoint} is told it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.launch.command import command_argv
from fontaine_tui.core.launch.engine_argv import build_argv
from fontaine_tui.core.preset.checks import PresetError
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run.endpoint import Endpoint, resume_endpoint
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.ledger import declare_amendment
from fontaine_tui.core.verdict.prereg import freeze

TAIL = (
    '[source]\nkind = "hf_trainer"\n[verdict]\nmetric = "eval_loss"\nanchor_step = 10\n'
    "endpoint_step = 20\nhealthy_max = 0.0\ndrift_min = 0.2\n"
)


def own_preset(where: Path, resume_argv: str) -> Preset:
    path = where / "own.toml"
    path.write_text(
        f'[run]\nname = "own"\noutput_dir = "run"\n[command]\n'
        f'argv = ["{sys.executable}", "-c", "pass"]\nresume_argv = {resume_argv}\n{TAIL}'
    )
    return load_preset(path)


def extended(where: Path, preset: Preset, to: int) -> RunFolder:
    """A launched run's folder (prereg.json) with an applied extend to `to`."""
    folder = RunFolder(where / "run")
    folder.root.mkdir()
    freeze(folder, preset, ["x"], "host")
    declare_amendment(folder, kind="extend", to_step=to, last_step_seen=0, preset=preset)
    return folder


def launch(cwd: Path, preset: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(cwd / "config")}
    env.pop("FONTAINE_NOTIFY", None)
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "launch", preset, "--resume", "--plain"]
        + ["--output-dir", "run"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_engine_is_told_the_endpoint_past_its_steps(tmp_path: Path) -> None:
    smoke = load_preset("smoke")
    folder = extended(tmp_path, smoke, 60)
    endpoint = resume_endpoint(folder)
    assert (endpoint.registered, endpoint.in_force, endpoint.extended) == (40, 60, True)
    argv = build_argv(smoke, folder.root, resume=True, python="PY", extend_to=endpoint.in_force)
    assert argv[-3:] == ["--resume", "--extend-to", "60"]
    # at or before the recipe's steps the engine trains there anyway: no flag
    assert "--extend-to" not in build_argv(smoke, folder.root, True, "PY", extend_to=40)
    assert "--extend-to" not in build_argv(smoke, folder.root, False, "PY", extend_to=60)


def test_a_broken_chain_refuses_the_resume(tmp_path: Path) -> None:
    folder = extended(tmp_path, load_preset("smoke"), 60)
    text = folder.amendments.read_text()
    folder.amendments.write_text(text.replace('"to_step":60', '"to_step":80'))
    res = launch(tmp_path, "smoke")
    assert res.returncode == 2, res.stdout + res.stderr
    [line] = [x for x in res.stderr.splitlines() if not x.startswith(("warn: ", "info: "))]
    assert line.startswith("fontaine-tui: error: --resume: ") and "amendments.jsonl:1" in line
    assert "the endpoint in force cannot be read" in line and "Traceback" not in res.stderr
    assert not folder.log.exists() and not folder.attempts.exists()  # nothing started


def test_a_command_that_cannot_be_told_is_refused_past_its_endpoint(tmp_path: Path) -> None:
    preset = own_preset(tmp_path, f'["{sys.executable}", "-c", "pass", "{{output_dir}}"]')
    folder = extended(tmp_path, preset, 30)
    res = launch(tmp_path, str(tmp_path / "own.toml"))
    assert res.returncode == 2, res.stdout + res.stderr
    [line] = [x for x in res.stderr.splitlines() if not x.startswith(("warn: ", "info: "))]
    assert "moves the endpoint from step 20 to 30" in line
    assert 'declare it with {endpoint} in resume_argv (e.g. "--max_steps", "{endpoint}")' in line
    assert not folder.attempts.exists() and not folder.engine_out.exists()


def test_a_resume_argv_naming_endpoint_is_told_it(tmp_path: Path) -> None:
    preset = own_preset(tmp_path, '["t", "--max_steps", "{endpoint}", "--x", "{{endpoint}}"]')
    run = tmp_path / "run"
    at = Endpoint(20, 30, "amendments.jsonl")
    assert command_argv(preset, run, True, tmp_path, at) == [
        "t",
        "--max_steps",
        "30",
        "--x",
        "{endpoint}",
    ]
    assert command_argv(preset, run, True, tmp_path)[2] == "20"  # the pre-registered one
    with pytest.raises(InputError):  # escaped braces name no endpoint: refused past it
        command_argv(own_preset(tmp_path, '["t", "{{endpoint}}"]'), run, True, tmp_path, at)
    with pytest.raises(PresetError, match=r"command\.argv\[1\]: expected \{output_dir\} as"):
        (tmp_path / "own.toml").write_text(
            f'[run]\nname = "own"\n[command]\nargv = ["t", "{{endpoint}}"]\n{TAIL}'
        )
        load_preset(tmp_path / "own.toml")
