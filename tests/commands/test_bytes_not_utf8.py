"""A byte that is not UTF-8 in a run folder's path or in a note, under a strict UTF-8 stdout:
the path is shown with the byte escaped (`\\xff`), a note or amendment text is refused in one
line (the ledger and the bank are UTF-8 JSON), and never a UnicodeEncodeError traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fontaine_tui.core.text import literal, literal_block
from tests.logs import records, write_log

ROOT = Path(__file__).parents[2]


def _run(*argv: bytes | str, env_extra: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    env = {
        **os.environ,
        "PYTHONIOENCODING": "utf-8:strict",
        "LC_ALL": "C.UTF-8",
        "PYTHONPATH": str(ROOT),
        **env_extra,
    }
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv],
        capture_output=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def test_literal_escapes_a_byte_that_was_not_utf8() -> None:
    text = os.fsdecode(b"run\xff\xfe")
    assert literal(text) == "run\\xff\\xfe" and literal_block(text) == "run\\xff\\xfe"
    assert literal("a\ud800b") == "a\\ud800b"
    literal(text).encode("utf-8")  # a strict UTF-8 stream can write it


def test_paths_and_notes_that_are_not_utf8(tmp_path: Path) -> None:
    base = os.fsencode(tmp_path)
    run = base + b"/run\xff"
    write_log(Path(os.fsdecode(run)) / "train_log.jsonl", records())
    env = {
        "FONTAINE_BANK": str(tmp_path / "bank"),
        "FONTAINE_REGISTRY": str(tmp_path / "state" / "babysit.toml"),
    }
    shown = os.fsencode(tmp_path) + b"/run\\xff"
    for argv, code in [
        (["verdict", run, "--preset", "smoke"], None),
        (["replay", run, "--plain", "--preset", "smoke"], None),
        (["attach", run, "--plain", "--until-end", "--preset", "smoke"], None),
        (["bank", "add", run, "--as", "x"], 0),
        (["bank", "show", "x"], 0),
        (["bank", "add", run, "--as", "y", "--note", b"n\xfeote"], 2),
        (["amend", run, "--extend-to", "2000", "--text", b"why\xfe", "--preset", "smoke"], 2),
    ]:
        res = _run(*argv, env_extra=env)
        both = res.stdout + res.stderr
        assert b"Traceback" not in both and b"UnicodeEncodeError" not in both, (argv, both)
        both.decode("utf-8")  # all of it UTF-8
        if code is not None:
            assert res.returncode == code, (argv, both)
        if code == 2:
            assert res.stderr.count(b"\n") == 1 and b"expected UTF-8 text" in res.stderr, both
            assert b"\\xfe" in res.stderr
        elif argv[0] != "bank" or argv[1] != "show":
            assert shown in both, (argv, both)
    assert not (Path(os.fsdecode(run)) / "amendments.jsonl").exists()
    assert not (tmp_path / "bank" / "y").exists()
