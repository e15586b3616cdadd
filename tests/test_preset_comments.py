"""Every file of the repository a shipped preset's comment cites is there.

A preset is read as a pre-registration: a comment that points the reader at a file the
repository does not have (as demosonly_1gpu once cited shared/reference/preregistration.txt)
sends them nowhere. A path counts as the repository's when it ends in a file name with an
extension, or starts with one of the repository's top-level folders; run folders
(`outputs/train/...`) are neither."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRESETS = sorted((ROOT / "presets").glob("*.toml"))
PATH = re.compile(r"(?<![\w./~$-])((?:[\w.-]+/)+[\w.-]*\w)")
TOP = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")}


def comments(text: str) -> Iterator[tuple[int, str]]:
    """Each comment of a TOML text with its line number: a `#` outside every string."""
    closing = ""  # the quotes that end the multi-line string this line is in
    for n, line in enumerate(text.splitlines(), 1):
        i = 0
        while i < len(line):
            if closing:
                end = line.find(closing, i)
                if end < 0:
                    break
                i, closing = end + 3, ""
            elif line.startswith(('"""', "'''"), i):
                closing, i = line[i : i + 3], i + 3
            elif line[i] in "\"'":
                quote, i = line[i], i + 1
                while i < len(line) and line[i] != quote:
                    i += 2 if quote == '"' and line[i] == "\\" else 1
                i += 1
            elif line[i] == "#":
                yield n, line[i + 1 :]
                break
            else:
                i += 1


def cited(text: str) -> Iterator[tuple[int, str]]:
    """The repository paths the comments of a TOML text cite, with their line numbers."""
    for n, comment in comments(text):
        for path in PATH.findall(comment):
            path = path.rstrip(".")
            if "." in path.rsplit("/", 1)[-1] or path.split("/", 1)[0] in TOP:
                yield n, path


def test_the_scanner_finds_a_cited_path_and_only_in_comments() -> None:
    text = (
        "# Encodes shared/reference/preregistration.txt (posted before launch).\n"
        'init = "outputs/train/a#b.txt"  # the checkpoint: presets/pretrain_so101.toml\n'
        'question = """\n# not a comment: docs/none.md\n"""  # docs/presets.md.\n'
        "# a run folder, not a file: outputs/train/smoke\n"
    )
    assert list(cited(text)) == [
        (1, "shared/reference/preregistration.txt"),
        (2, "presets/pretrain_so101.toml"),
        (5, "docs/presets.md"),
    ]


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.stem)
def test_every_path_a_preset_comment_cites_is_in_the_repository(preset: Path) -> None:
    missing = [
        f"{preset.name}:{n}: {path}"
        for n, path in cited(preset.read_text())
        if not (ROOT / path).exists()
    ]
    assert not missing, f"cited in a comment, not in the repository: {missing}"
