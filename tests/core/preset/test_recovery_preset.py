"""`[recovery]` in a preset: checked in one line (exit 2), frozen only when set.

A preset without it (or with max_restarts = 0) keeps the sha256 it had before the section
existed: the demo run's prereg.json, frozen then, still matches its preset.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.preset.checks import PresetError
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.preset.recovery import RecoverySpec
from fontaine_tui.core.preset.validate import preset_from_canonical

ROOT = Path(__file__).resolve().parents[3]
BASE = (ROOT / "presets" / "demosonly_1gpu.toml").read_text()


def _with(tmp_path: Path, section: str, name: str = "r.toml") -> Path:
    path = tmp_path / name
    path.write_text(BASE + "\n" + section + "\n")
    return path


@pytest.mark.parametrize(
    ("section", "line"),
    [
        ("[recovery]\nmax_restarts = -1", "recovery.max_restarts: expected an integer in [0, 100]"),
        (
            "[recovery]\nmax_restarts = 101",
            "recovery.max_restarts: expected an integer in [0, 100]",
        ),
        ('[recovery]\nmax_restarts = "3"', "recovery.max_restarts: expected an integer"),
        ("[recovery]\nmax_restarts = true", "recovery.max_restarts: expected an integer"),
        (
            '[recovery]\nmax_restarts = 2\non = ["nan"]',
            "recovery.on: expected a non-empty list of preemption, oom, node_failure "
            "(a non-finite loss is never restarted), got 'nan'",
        ),
        ("[recovery]\nmax_restarts = 2\non = []", "recovery.on: expected a non-empty list"),
        ('[recovery]\non = ["oom", "oom"]', "recovery.on: expected a non-empty list of"),
        ("[recovery]\nretries = 2", "recovery.retries: unknown key (expected one of: max_"),
        ("[recovery]\nbackoff_s = -1", "recovery.backoff_s: expected seconds in [0, 60]"),
        ("[recovery]\nbackoff_s = 61", "recovery.backoff_s: expected seconds in [0, 60]"),
        ('[recovery]\nbackoff_s = "2"', "recovery.backoff_s: expected seconds in [0, 60]"),
        ("[recovery]\nbackoff_s = true", "recovery.backoff_s: expected seconds in [0, 60]"),
    ],
)
def test_a_wrong_key_is_one_line(tmp_path, section, line):
    with pytest.raises(PresetError) as err:
        load_preset(_with(tmp_path, section))
    assert line in str(err.value) and "\n" not in str(err.value)


def test_the_command_line_says_it_in_one_line_and_exits_2(tmp_path):
    path = _with(tmp_path, '[recovery]\nmax_restarts = 2\non = ["nan"]')
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "doctor", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.strip().count("\n") == 0 and "Traceback" not in res.stderr
    assert f"{path}: recovery.on: expected" in res.stderr


def test_a_command_without_resume_argv_cannot_be_restarted(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("""[run]
name = "c"
output_dir = "runs/c"
[command]
argv = ["python", "train.py"]
[source]
kind = "jsonl"
[verdict]
metric = "eval_loss"
anchor_step = 20
endpoint_step = 40
healthy_max = 0.0
drift_min = 0.2
[recovery]
max_restarts = 1
""")
    with pytest.raises(PresetError, match=r"recovery.max_restarts: expected \[command\] resume_a"):
        load_preset(path)


def test_unset_or_zero_keeps_the_sha256_and_set_changes_it(tmp_path):
    plain = load_preset(_with(tmp_path, "", "a.toml"))
    assert plain.recovery == RecoverySpec() and "recovery" not in plain.canonical
    zero = load_preset(_with(tmp_path, "[recovery]\nmax_restarts = 0", "b.toml"))
    assert zero.sha256 == plain.sha256
    on = load_preset(_with(tmp_path, "[recovery]\nmax_restarts = 2", "c.toml"))
    assert on.sha256 != plain.sha256
    assert on.canonical["recovery"] == {
        "max_restarts": 2,
        "on": ["node_failure", "oom", "preemption"],
    }
    order = load_preset(
        _with(tmp_path, '[recovery]\nmax_restarts = 2\non = ["oom", "preemption", "node_failure"]')
    )
    assert order.sha256 == on.sha256  # the causes' order is no change of contract
    default = load_preset(_with(tmp_path, "[recovery]\nmax_restarts = 2\nbackoff_s = 2", "d.toml"))
    assert default.sha256 == on.sha256  # the default wait written out: the same contract
    quick = load_preset(_with(tmp_path, "[recovery]\nmax_restarts = 2\nbackoff_s = 0.5", "e.toml"))
    assert quick.recovery.backoff_s == 0.5 and quick.sha256 != on.sha256
    assert quick.canonical["recovery"]["backoff_s"] == 0.5
    assert preset_from_canonical(quick.canonical, "prereg.json").sha256 == quick.sha256


def test_the_demo_runs_frozen_preset_still_matches():
    """prereg.json frozen before [recovery] existed: its preset, checked now, hashes the same."""
    doc = json.loads((ROOT / "fontaine_tui" / "demo" / "run" / "prereg.json").read_text())
    frozen = preset_from_canonical(doc["preset"], "prereg.json")
    assert "recovery" not in frozen.canonical
    assert frozen.sha256 == doc["preset_sha256"], "a preset without [recovery] changed sha256"
