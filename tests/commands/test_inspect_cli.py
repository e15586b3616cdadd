"""`fontaine-tui inspect` as a user runs it (a subprocess): a run tensorboardX wrote (at
Lightning's steps), inspected, its starting preset written, refused until its bounds are filled, then a verdict;
and bad input, one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.log.formats.conftest import loss

ROOT = Path(__file__).parents[2]
VAL = {s: 3.0 - 0.01 * s for s in range(9, 80, 10)}  # Lightning validates at global_step - 1


def cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    tbx = pytest.importorskip("tensorboardX")

    folder = tmp_path_factory.mktemp("inspect") / "lit_run"
    writer = tbx.SummaryWriter(str(folder / "lit" / "version_0"))
    for step in range(80):
        writer.add_scalar("train_loss", loss(step), step)
        if step in VAL:
            writer.add_scalar("val_mae", VAL[step], step)
    writer.close()
    return folder


def test_inspect_then_preset_then_verdict(run, tmp_path):
    shown = cli("inspect", str(run))
    assert shown.returncode == 0, shown.stderr
    assert "format   tensorboard" in shown.stdout
    assert "every 10 steps from 9 to 79" in shown.stdout
    assert "ended    not known" in shown.stdout
    doc = json.loads(cli("inspect", str(run), "--json").stdout)
    keys = {k["key"]: k for k in doc["keys"]}
    assert keys["val_mae"] == {
        "key": "val_mae",
        "role": "eval",
        "first": 9,
        "last": 79,
        "count": 8,
        "nan": 0,
        "not_number": 0,
    }
    assert keys["train_loss"]["role"] == "loss" and keys["train_loss"]["count"] == 80
    assert doc["probes"]["every"] == 10 and doc["probes"]["first"] == 9

    preset = tmp_path / "lit.toml"
    wrote = cli("inspect", str(run), "--preset-out", str(preset))
    assert wrote.returncode == 0, wrote.stderr
    text = preset.read_text()
    assert 'kind = "tensorboard"' in text and 'metric = "val_mae"' in text
    assert "anchor_step = 9 " in text and "endpoint_step = 79 " in text
    # never over a file that is there
    again = cli("inspect", str(run), "--preset-out", str(preset))
    assert again.returncode == 2 and again.stderr.count("\n") == 1
    assert "exists" in again.stderr and preset.read_text() == text
    # no verdict with placeholder bounds
    refused = cli("verdict", str(run), "--preset", str(preset))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "complete the [verdict] bounds" in refused.stderr
    preset.write_text(
        text.replace('"COMPLETE: a number"', "0.1", 1).replace('"COMPLETE: a number"', "0.5", 1)
    )
    read = cli("verdict", str(run), "--preset", str(preset), "--json")
    verdict = json.loads(read.stdout)
    assert verdict["read_step"] == 79 and verdict["verdict"] == "HEALTHY"
    assert verdict["delta"] == pytest.approx(VAL[79] - VAL[9])
    forced = cli("inspect", str(run), "--preset-out", str(preset), "--force")
    assert forced.returncode == 0 and preset.read_text() == text


@pytest.mark.parametrize(
    "target, message",
    [
        ("missing", "no such folder"),
        ("empty", "no log this console reads"),
        ("gpu1:/runs/a", "inspect reads a local folder"),
    ],
)
def test_bad_input_is_one_line_exit_2(target, message, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("nothing to read")
    arg = target if ":" in target else str(tmp_path / target)
    res = cli("inspect", arg)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and message in res.stderr, res.stderr
