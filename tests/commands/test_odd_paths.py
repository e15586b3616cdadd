"""A run folder that is a link to `/`, or a path with a name over 255 bytes (ENAMETOOLONG):
one line naming the path, exit 2, across verdict, replay, bank, amend and attach; nothing
is written into `/`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
COMMANDS = [
    ["verdict", "{t}"],
    ["verdict", "{t}", "--preset", "smoke"],
    ["replay", "{t}", "--plain", "--preset", "smoke"],
    ["bank", "add", "{t}", "--as", "x"],
    ["amend", "{t}", "--extend-to", "50", "--preset", "smoke"],
    ["attach", "{t}", "--plain", "--until-end", "--preset", "smoke"],
]


def _targets(tmp_path: Path) -> dict[str, tuple[str, str]]:
    link = tmp_path / "run"
    link.symlink_to("/")
    long = str(tmp_path / ("a" * 300))
    return {
        "root": (str(link), "this is the root folder / (through a link)"),
        "long": (long, "a name in this path is longer than a file system allows"),
    }


@pytest.mark.parametrize("case", ["root", "long"])
def test_one_line_and_exit_2(tmp_path: Path, case: str) -> None:
    target, says = _targets(tmp_path)[case]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FONTAINE_BANK": str(tmp_path / "bank"),
        "FONTAINE_REGISTRY": str(tmp_path / "state" / "babysit.toml"),
    }
    env.pop("FONTAINE_DEBUG", None)
    for argv in COMMANDS:
        argv = [a.format(t=target) for a in argv]
        res = subprocess.run(
            [sys.executable, "-m", "fontaine_tui", *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=60,
        )
        assert res.returncode == 2, (argv, res.stderr[-2000:])
        assert res.stderr.count("\n") == 1 and says in res.stderr, (argv, res.stderr)
    assert not Path("/amendments.jsonl").exists()
    assert not (tmp_path / "bank").exists()
