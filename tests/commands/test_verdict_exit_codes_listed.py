"""Every verdict class's exit code is listed from EXIT_CODES, and a relabelled class keeps it.

`verdict --help`, the README and docs/command-line.md each list the codes; they are checked
against the one table (core/verdict/record.py), so a new class cannot be left out of any.
A preset's [labels] give a class its own word (pretrain_so101 says LEARNED for HEALTHY); the
exit code stays the class's, as a real `verdict` of such a run shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from fontaine_tui.commands.verdict import LABEL_EXAMPLE
from fontaine_tui.core.verdict.record import EXIT_CODES, PROVISIONAL_OFFSET
from tests.commands.test_every_preset_reads_back import engine_run

ROOT = Path(__file__).resolve().parents[2]


def flat(text: str) -> str:
    """Text with its line breaks and runs of spaces as one space (help and Markdown wrap)."""
    return " ".join(text.split())


def labels(preset: str) -> dict[str, str]:
    doc = tomllib.loads((ROOT / "presets" / f"{preset}.toml").read_text())
    return dict(doc.get("labels", {}))


def test_verdict_help_lists_every_class_code_and_says_what_a_label_gets() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "verdict", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert res.returncode == 0, res.stderr
    exits = flat(res.stdout.split("exit codes:", 1)[1])
    for cls, code in EXIT_CODES.items():
        assert re.search(rf"(^|, ){re.escape(cls)} {code}(,|;)", exits), (cls, exits)
    assert f"adds {PROVISIONAL_OFFSET}" in exits
    preset, label, cls = LABEL_EXAMPLE
    assert labels(preset)[cls] == label  # the example is the shipped preset's own word
    assert f"{preset}: {label} is {cls}, exit {EXIT_CODES[cls]}" in exits, exits


def test_the_readme_lists_every_class_code_and_the_shipped_labels() -> None:
    text = flat((ROOT / "README.md").read_text())
    codes = ", ".join(f"{cls} {code}" for cls, code in EXIT_CODES.items())
    assert f"{codes}; {PROVISIONAL_OFFSET} more when PROVISIONAL" in text
    preset, label, cls = LABEL_EXAMPLE
    for c, word in labels(preset).items():  # LEARNED, DIVERGED, STALLED: each for its class
        assert f"{word} for {c}" in text, (word, c)
    assert f"{label} exits {EXIT_CODES[cls]}" in text


def test_the_command_line_page_has_a_row_for_every_class() -> None:
    text = (ROOT / "docs" / "command-line.md").read_text()
    table = text.split("### `fontaine-tui verdict` exit codes", 1)[1]
    rows = {
        m[0]: (int(m[1]), int(m[2]))
        for m in re.findall(r"^\| ([A-Z-]+) \| (\d+) \| (\d+) \|$", table, re.M)
    }
    assert rows == {c: (n, n + PROVISIONAL_OFFSET) for c, n in EXIT_CODES.items()}
    preset, label, cls = LABEL_EXAMPLE
    assert f"`{preset}`'s {label} is {cls} and exits {EXIT_CODES[cls]}" in flat(table)


def test_a_relabelled_class_exits_with_its_class_code(tmp_path: Path) -> None:
    """A whole pretrain_so101 run whose error falls reads LEARNED and exits as HEALTHY."""
    preset, label, cls = LABEL_EXAMPLE
    root = tmp_path / preset
    root.mkdir()
    engine_run(root, ROOT / "presets" / f"{preset}.toml")
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "verdict", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f"VERDICT: {label}" in res.stdout, res.stdout + res.stderr
    assert res.returncode == EXIT_CODES[cls] == 0, res.stderr
