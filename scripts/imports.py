"""The import graph of fontaine_tui and the engine (engine/): cycles, largest modules.

    python scripts/imports.py

Every `import`/`from ... import` of a fontaine_tui or engine module counts, also those inside
functions and under TYPE_CHECKING (a cycle hidden in a function is still a cycle in the
design), and relative ones (`from .x import y`, `from . import x`: the engine imports its own
modules only so). The engine's installed name, fontaine_engine, is read as engine.
Layers, top to bottom (ARCHITECTURE.md): cli/commands > console > app > screens >
widgets/palette > model > core wings (launch > verdict > follow/host > log) > core shared; the
layers themselves are import-linter's contracts (pyproject.toml).
Exit 1 when there is a cycle.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKGS = ("fontaine_tui", "engine")
ALIASES = {"fontaine_engine": "engine"}  # installed name -> folder


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def canonical(name: str) -> str:
    head, dot, rest = name.partition(".")
    return ALIASES.get(head, head) + dot + rest


def graph() -> tuple[dict[str, set[str]], dict[str, int]]:
    mods = {module_name(p): p for pkg in PKGS for p in sorted((ROOT / pkg).rglob("*.py"))}
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [canonical(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = mod.split(".")[
                        : len(mod.split(".")) - node.level + (1 if is_pkg else 0)
                    ]
                    base = ".".join([*parent, base] if base else parent)
                base = canonical(base)
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names
                ]
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    edges[mod].add(t)
    lines = {m: len(p.read_text().splitlines()) for m, p in mods.items()}
    return edges, lines


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10000)  # restored below: tests call this in their own process

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(old_limit)
    return out


def main() -> int:
    edges, lines = graph()
    found = cycles(edges)
    print(f"modules: {len(edges)}, import edges: {sum(map(len, edges.values()))}")
    print(f"import cycles: {len(found)}")
    for comp in found:
        print("  " + " <-> ".join(comp))
    big = sorted(lines.items(), key=lambda kv: -kv[1])[:5]
    print("largest modules: " + ", ".join(f"{m} {n}" for m, n in big))
    print(f"app.py: {lines.get('fontaine_tui.app', 0)} lines")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
