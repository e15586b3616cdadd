"""`fontaine-tui presets` says, on an INVALID preset's line, what makes it load.

demosonly_1proc_cpu reads its comparator from a banked run (demosonly_2rank_cpu). With an
empty bank the listing says INVALID with the reason and then, on the same line, the commands
that make the bank entry (one line a preset: its first word is the preset's name); after following them (a finished run banked as the tests of every
preset bank it) the preset lists with its sha256. Any other INVALID preset is told the key
and file to fix. Each through the real command in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.commands.test_every_preset_reads_back import PRESETS, ROOT, engine_run

NAMES = {p.stem for p in PRESETS}


def presets(tmp_path: Path, *argv: str) -> list[str]:
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "presets", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "FONTAINE_BANK": str(tmp_path / "bank")},
    )
    assert res.returncode == 0 and res.stderr == "", res.stderr
    return res.stdout.splitlines()


def row(lines: list[str], name: str) -> str:
    """The preset's line; every line starts with a preset's name."""
    assert all(ln.split()[0] in NAMES | {"broken"} for ln in lines), lines
    [line] = [ln for ln in lines if ln.split()[0] == name]
    return line


def test_a_preset_waiting_for_its_banked_run_says_how_to_bank_it(tmp_path: Path) -> None:
    line = row(presets(tmp_path), "demosonly_1proc_cpu")
    why, _, step = line.partition("; next: ")
    assert "INVALID" in why and "no such banked run" in why, line
    # its comparator starts from pretrain_so101's checkpoint, not made yet in this folder; and
    # `;`: launch --plain exits with its verdict's code, any verdict makes a comparator
    assert step.endswith(
        "fontaine-tui launch pretrain_so101 --plain; "
        "fontaine-tui launch demosonly_2rank_cpu --plain --output-dir runs/demosonly_2rank_cpu; "
        "fontaine-tui bank add runs/demosonly_2rank_cpu --as demosonly_2rank_cpu"
    ), step

    banked = tmp_path / "runs" / "demosonly_2rank_cpu"  # what those commands make
    banked.mkdir(parents=True)
    engine_run(banked, ROOT / "presets" / "demosonly_2rank_cpu.toml")
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "bank", "add", str(banked)]
        + ["--as", "demosonly_2rank_cpu"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "FONTAINE_BANK": str(tmp_path / "bank")},
    )
    assert res.returncode == 0, res.stderr
    line = row(presets(tmp_path), "demosonly_1proc_cpu")
    assert "INVALID" not in line and "next:" not in line, line
    assert line.endswith("demosonly_1proc_cpu.toml)"), line


def test_any_other_invalid_preset_is_told_the_key_and_file_to_fix(tmp_path: Path) -> None:
    mine = tmp_path / "presets"
    mine.mkdir()
    text = (ROOT / "presets" / "smoke.toml").read_text().replace("steps = 40", "steps = -1", 1)
    (mine / "broken.toml").write_text(text)
    why, _, step = row(presets(tmp_path), "broken").partition("; next: ")
    assert "INVALID" in why and "recipe.steps" in why, why
    assert step.startswith(f"fix recipe.steps in {mine / 'broken.toml'} "), step
    assert "`fontaine-tui presets show broken`" in step, step
