"""replay's and attach's refusal without a prereg.json names the file that was looked for,
a path that exists up to its last name, never `replay LOG/prereg.json`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.logs import records, write_log

ROOT = Path(__file__).parents[2]


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )


@pytest.mark.parametrize("command", ["replay", "attach"])
@pytest.mark.parametrize("given", ["folder", "log"])
def test_the_refusal_names_the_prereg_path(tmp_path: Path, command: str, given: str) -> None:
    log = write_log(tmp_path / "run" / "train_log.jsonl", records())
    target = log.parent if given == "folder" else log
    res = _cli(command, str(target), "--plain", *(["--until-end"] if command == "attach" else []))
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    wanted = log.parent / "prereg.json"
    assert res.stderr.startswith(f"fontaine-tui: error: {wanted}: no such file"), res.stderr
    assert "--preset" in res.stderr
    assert f"{log}/prereg.json" not in res.stderr


def test_a_bad_prereg_is_named_by_its_path(tmp_path: Path) -> None:
    log = write_log(tmp_path / "run" / "train_log.jsonl", records())
    (log.parent / "prereg.json").write_text("{")
    res = _cli("replay", str(log), "--plain")
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith(f"fontaine-tui: error: {log.parent / 'prereg.json'}: ")
