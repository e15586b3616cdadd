"""One concept per module: a module past 600 lines says in its docstring why it is one.

The house splits a module where it holds two concepts, never to meet a line count
(CONTRIBUTING.md). A module longer than SOFT_LIMIT lines carries a paragraph beginning
"Its size:" in its docstring that says why its lines belong together; one that shrinks back
under the limit drops the paragraph, so no reason outlives its module's length.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOFT_LIMIT = 600
MARK = "Its size:"


def _modules() -> list[Path]:
    return sorted(p for pkg in ("fontaine_tui", "engine") for p in (ROOT / pkg).rglob("*.py"))


def _says_why(path: Path) -> bool:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return any(line.startswith(MARK) for line in doc.splitlines())


def size_findings(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        lines = len(path.read_text().splitlines())
        why = _says_why(path)
        name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        if lines > SOFT_LIMIT and not why:
            found.append(f"{name}: {lines} lines and no '{MARK}' paragraph saying why")
        elif lines <= SOFT_LIMIT and why:
            found.append(f"{name}: {lines} lines, under {SOFT_LIMIT}: drop its '{MARK}' paragraph")
    return found


def test_every_long_module_says_why_it_is_one() -> None:
    assert size_findings(_modules()) == []


def test_the_rule_catches_a_long_module_and_a_stale_reason(tmp_path: Path) -> None:
    long = tmp_path / "long.py"
    long.write_text('"""A long module."""\n' + "x = 1\n" * SOFT_LIMIT)
    stale = tmp_path / "stale.py"
    stale.write_text(f'"""A short module.\n\n{MARK} it was long once.\n"""\n')
    kept = tmp_path / "kept.py"
    kept.write_text(f'"""A long module.\n\n{MARK} one table.\n"""\n' + "x = 1\n" * SOFT_LIMIT)
    found = size_findings([long, stale, kept])
    assert len(found) == 2
    assert found[0].endswith(f"{SOFT_LIMIT + 1} lines and no '{MARK}' paragraph saying why")
    assert "drop its" in found[1]
