"""The docs build with every link and anchor found, and their verdict.json example is the
code's output, not a hand-written copy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_the_docs_verdict_example_is_what_the_code_writes():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import verdict_example
    finally:
        sys.path.pop(0)
    page = (ROOT / "docs" / "verdict-json.md").read_text()
    assert verdict_example.block() in page, (
        "docs/verdict-json.md's verdict.json example differs from the code's: "
        "run `python scripts/verdict_example.py --write`"
    )
    assert '"verdict": "AMBIGUOUS-BY-INSTRUMENT"' in verdict_example.example()
    res = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "verdict_example.py")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert res.stdout.strip() == verdict_example.example()


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """`--strict` fails on any warning; not `-q`, which would hide the warnings it counts."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_the_docs_build_strict_with_every_link_and_anchor_found(tmp_path):
    res = mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert res.returncode == 0, res.stdout + res.stderr
    assert (tmp_path / "site" / "engine" / "index.html").read_text().count("Re-scoring")
    assert (tmp_path / "site" / "screenshots" / "monitor.svg").is_file()


@pytest.mark.parametrize(
    "link, said",
    [
        ("[gone](missing.md)", "missing.md"),
        ("[nowhere](b.md#no-such-heading)", "no-such-heading"),
    ],
)
def test_the_docs_config_fails_on_a_broken_link_or_anchor(tmp_path, link, said):
    """mkdocs.yml's own settings, on two small pages: one broken link fails the build."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text(f"# A\n\nSee {link}.\n")
    (docs / "b.md").write_text("# B\n\n## A heading\n")
    config.update(docs_dir=str(docs), nav=["a.md", "b.md"])
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    res = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert res.returncode != 0 and said in res.stdout + res.stderr
    (docs / "a.md").write_text("# A\n\nSee [B](b.md#a-heading).\n")
    res = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert res.returncode == 0, res.stdout + res.stderr
