"""Values that make no sense, and paths that are not files, are one line and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from tests.core.launch.conftest import preset_variant
from tests.logs import RIGONLY_LIKE, write_log


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "Traceback" not in err[0]
    return err[0]


@pytest.mark.parametrize(
    "key, value, said",
    [
        ("healthy_max", "-inf", "verdict.healthy_max: expected a finite number, got -inf"),
        ("lr", "inf", "recipe.lr: expected a finite number, got inf"),
        ("gpu_hours", "-1", "gates.gpu_hours: expected a number >= 0"),
        ("gpu_hours", "inf", "gates.gpu_hours: expected a finite number"),
        ("stall_min_s", "-5", "gates.stall_min_s: expected a number >= 0"),
        ("warmup_steps", "-5", "recipe.warmup_steps: expected an integer in [0,"),
        ("declared_after_step", "-1", "declared_after_step: expected an integer in [0,"),
        ("steps", "99999999999999999999", "recipe.steps: expected an integer in [0,"),
    ],
)
def test_senseless_preset_values_are_one_line_exit_2(tmp_path, capsys, key, value, said):
    text = (Path(__file__).resolve().parents[3] / "presets" / "demosonly_1gpu.toml").read_text()
    if f"\n{key} = " not in text:  # a key the preset leaves at its default: add it
        section = {"stall_min_s": "[gates]", "warmup_steps": "[recipe]"}[key]
        text = text.replace(f"{section}\n", f"{section}\n{key} = {value}\n", 1)
        path = tmp_path / "odd.toml"
        path.write_text(text)
    else:
        path = preset_variant(tmp_path, "demosonly_1gpu", name="odd", **{key: value})
    assert main(["presets", "show", str(path)]) == 2
    line = _one_line(capsys)
    assert said in line, line


def test_replay_speed_and_scale_factor_must_make_sense(tmp_path, capsys):
    log = write_log(tmp_path / "run" / "train_log.jsonl", probes=RIGONLY_LIKE)
    for speed in ("1e-300", "0", "nan", "1e300"):
        assert (
            main(["replay", str(log), "--preset", "demosonly_1gpu", "--plain", "--speed", speed])
            == 2
        )
        assert "--speed" in _one_line(capsys)
    for factor in ("nan", "inf", "-2", "0"):
        assert (
            main(
                [
                    "amend",
                    str(tmp_path / "run"),
                    "--scale-factor",
                    factor,
                    "--preset",
                    "demosonly_1gpu",
                ]
            )
            == 2
        )
        line = _one_line(capsys)
        assert "--scale-factor" in line and "comparator" not in line, line


def test_amend_where_the_ledger_cannot_be_written_is_one_line(tmp_path, capsys):
    """A folder in the ledger's place: even root (CI), which writes into read-only folders,
    cannot open it as the ledger; the file's owner says so in one line."""
    run = tmp_path / "run"
    write_log(run / "train_log.jsonl", probes=RIGONLY_LIKE)
    (run / "amendments.jsonl").mkdir()  # even root cannot open a folder as the ledger
    assert main(["amend", str(run), "--scale-factor", "2", "--preset", "demosonly_1gpu"]) == 2
    assert "amendments.jsonl: a folder, not a file; refused" in _one_line(capsys)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("command", ["verdict", "replay", "attach"])
def test_a_log_that_is_not_a_regular_file_is_refused_at_once(tmp_path, kind, command):
    run = tmp_path / "run"
    run.mkdir()
    if kind == "fifo":
        os.mkfifo(run / "train_log.jsonl")
    else:
        (run / "train_log.jsonl").symlink_to("/dev/zero")
    target = str(run / "train_log.jsonl") if command == "replay" else str(run)
    argv = {
        "verdict": [target, "--preset", "demosonly_1gpu"],
        "replay": [target, "--preset", "demosonly_1gpu", "--plain"],
        "attach": [target, "--preset", "demosonly_1gpu", "--plain", "--until-end"],
    }[command]
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", command, *argv],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-500:]
    assert "not a regular file" in res.stderr and len(res.stderr.strip().splitlines()) == 1
