"""A user's own trainer, started as its [command] says: the real example Trainer script run
through a launcher script (FONTAINE_OUTPUT_DIR), its provenance frozen, its run read by
`fontaine-tui verdict` with the declared platform delta on the card."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.launch.command import (
    command_argv,
    command_cwd,
    command_env,
    command_provenance,
)
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze

ROOT = Path(__file__).resolve().parents[2]
MARK = "# ---- command block ----"
BLOCK = (
    f'"{sys.executable}" {ROOT}/examples/own_trainer/train.py --output_dir "$FONTAINE_OUTPUT_DIR" '
    "--max_steps 40 --eval_every 10\n"
)


@pytest.mark.slow
def test_the_own_trainer_runs_through_its_launcher_and_is_read(tmp_path, capsys):
    pytest.importorskip("transformers")
    (tmp_path / "box_launcher.sh").write_text(f"#!/bin/bash\nset -e\n{MARK}\n{BLOCK}")
    (tmp_path / "launch_box.sh").write_text(
        f"#!/bin/bash\nset -e\nexport OMP_NUM_THREADS=1\n{MARK}\n{BLOCK}"
    )
    path = tmp_path / "own.toml"
    path.write_text(f'''[run]
name = "own"
output_dir = "runs/own"
[command]
script = "launch_box.sh"
block_reference = "box_launcher.sh"
block_marker = "{MARK}"
env = {{ HF_HUB_OFFLINE = "1" }}
[source]
kind = "hf_trainer"
[verdict]
metric = "eval_loss"
anchor_step = 20
endpoint_step = 40
healthy_max = 0.0
drift_min = 0.2
''')
    preset = load_preset(path)
    folder = RunFolder(tmp_path / "runs" / "own")
    folder.root.mkdir(parents=True)
    cwd = command_cwd(preset, tmp_path)
    argv = command_argv(preset, folder.root, False, cwd)
    freeze(
        folder, preset, argv, "host", provenance=command_provenance(preset, argv, cwd, folder.root)
    )
    with open(folder.engine_out, "wb") as out:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env=command_env(preset, folder.root),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=300,
        )
    assert proc.returncode == 0, folder.engine_out.read_text()[-2000:]
    assert (folder.root / "trainer_state.json").is_file()
    assert (folder.root / "checkpoint-40").is_dir()
    code = main(["verdict", str(folder.root)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "eval_loss(20)" in text and "VERDICT: HEALTHY" in text, text
    assert (
        "platform delta (launcher above its command block, vs the reference): 1 line(s)" in text
    ), text
    assert "  +export OMP_NUM_THREADS=1" in text
    frozen = json.loads(folder.prereg.read_text())["provenance"]
    assert frozen["command"]["env"]["FONTAINE_OUTPUT_DIR"] == str(folder.root)
    assert set(frozen["files"]) == {"launch_box.sh", "box_launcher.sh"}
