"""The README's first steps work as written, and every link in it leads somewhere."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
INSTALL_AND_RUN = (
    "pip install -e '.[engine]' && fontaine-tui launch pretrain_so101 --plain --once "
    "&& fontaine-tui launch demosonly_1gpu --once"
)
TEST = "bash scripts/test"


def shell_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", text, re.S)]


def slug(heading: str) -> str:
    """A heading's anchor, as MkDocs (Python-Markdown's toc) and GitHub make it."""
    text = unicodedata.normalize("NFKD", heading.replace("`", "")).encode("ascii", "ignore")
    text = re.sub(r"[^\w\s-]", "", text.decode()).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {slug(m) for m in re.findall(r"^#+ (.+)$", text, re.M)}


def test_the_readme_stays_short():
    assert len(README.read_text().splitlines()) <= 250


def test_the_first_two_commands_are_install_and_run_then_test():
    """The first steps a newcomer copies: install and launch the reference experiment, then
    install what the tests need and run them. The demo block may come before them."""
    blocks = [b for b in shell_blocks(README.read_text()) if "fontaine-tui demo" not in b]
    assert blocks[:2] == [INSTALL_AND_RUN, TEST]


def test_what_the_first_two_commands_name_exists():
    from fontaine_tui.cli import main

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert "engine" in extras and {"pytest>=8,<9"} <= set(extras["test"])
    assert (ROOT / "scripts" / "test").is_file()
    for preset in ("pretrain_so101", "demosonly_1gpu"):
        assert main(["presets", "show", preset]) == 0


@pytest.mark.parametrize("target", sorted(set(re.findall(r"\]\(([^)\s]+)\)", README.read_text()))))
def test_every_readme_link_leads_somewhere(target):
    if target.startswith(("http://", "https://")):
        return
    path, _, anchor = target.partition("#")
    page = ROOT / path
    assert page.exists(), f"README.md links to {target}: there is no {path}"
    if anchor:
        assert anchor in anchors(page), f"README.md links to {target}: no such heading"
