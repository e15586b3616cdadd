"""The README's install-and-run command can be run twice, with the same result.

Its launch part (what follows `pip install -e '.[engine]' &&`) runs as written, through bash,
twice in one folder. The presets it names are the shipped ones with their step counts cut
down (FONTAINE_PRESETS points at the cut copies, of the same names), so the engine trains a
few steps. The first run trains both; the second trains nothing more, reads both runs
back and exits with the same code, saying the same final verdicts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from fontaine_tui.core.run.attempts import read_attempts
from fontaine_tui.core.runfolder import RunFolder
from tests.test_readme import README, shell_blocks

pytest.importorskip("torch")
pytestmark = [pytest.mark.engine, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[1]
INSTALL = "pip install -e '.[engine]' && "
# key = value lines cut to a few steps, per preset (the same keys in every table they are in)
CUT = {
    "pretrain_so101": {
        "steps": 4,
        "eval_every": 2,
        "save_every": 4,
        "warmup_steps": 1,
        "anchor_step": 2,
        "endpoint_step": 4,
        "num_workers": 0,
    },
    "demosonly_1gpu": {
        "steps": 8,
        "eval_every": 2,
        "save_every": 4,
        "warmup_steps": 1,
        "anchor_step": 4,
        "endpoint_step": 8,
        "from_step": 2,
        "declared_after_step": 2,
        "declared_before_step": 4,
        "level_step": 2,
        "num_workers": 0,
    },
}


def _cut_presets(into: Path) -> Path:
    into.mkdir()
    for name, keys in CUT.items():
        text = (ROOT / "presets" / f"{name}.toml").read_text()
        for key, value in keys.items():
            text, n = re.subn(rf"(?m)^{key} = \d+", f"{key} = {value}", text)
            assert n, f"{name}: no {key}"
        (into / f"{name}.toml").write_text(text)
    return into


def _launch_part() -> str:
    first = next(b for b in shell_blocks(README.read_text()) if "fontaine-tui launch" in b)
    assert first.startswith(INSTALL), first
    return first.removeprefix(INSTALL)


def _run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _verdicts(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.startswith("VERDICT:")]


def test_the_readme_launch_runs_twice_with_the_same_result(tmp_path, corpus_dir):
    command = _launch_part()
    env = {**os.environ, "FONTAINE_PRESETS": str(_cut_presets(tmp_path / "presets"))}
    env.pop("FONTAINE_DEBUG", None)
    assert shutil.which("fontaine-tui", path=env.get("PATH")), "fontaine-tui is not installed"
    work = tmp_path / "work"
    work.mkdir()
    first = _run(command, work, env)
    folders = [RunFolder(p) for p in sorted((work / "outputs" / "train").iterdir())]
    assert len(folders) == 2, first.stdout + first.stderr
    ran = {f.root.name: len(read_attempts(f)) for f in folders}
    assert all(n == 1 for n in ran.values()), ran
    second = _run(command, work, env)
    assert second.returncode == first.returncode, second.stdout + second.stderr
    assert "Traceback" not in second.stderr
    assert {f.root.name: len(read_attempts(f)) for f in folders} == ran  # nothing trained again
    assert _verdicts(second.stdout) == _verdicts(first.stdout), second.stdout
    assert len(_verdicts(first.stdout)) == 2, first.stdout
    read = [ln for ln in second.stdout.splitlines() if "not trained again (--once)" in ln]
    assert len(read) == 2 and "pretrain_so101 already ran to its end in " in read[0], read
