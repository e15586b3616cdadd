"""Write ARCHITECTURE.md's module listing from the modules' own docstrings.

    python scripts/architecture.py            # rewrite the listing
    python scripts/architecture.py --check    # exit 1 naming each module that differs

Each package of fontaine_tui/ and engine/ is a heading with its __init__.py's first line, and
each module a line with its docstring's first paragraph (one summary line, as ruff's D205 holds
it). Only the text between the two marker lines is written; the rest of ARCHITECTURE.md is
prose kept as written. A module or package without a docstring is named and nothing is
written: its first line is its one description.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
DOC = "ARCHITECTURE.md"
PKGS = ("fontaine_tui", "engine")
BEGIN = (
    "<!-- BEGIN modules: written by `python scripts/architecture.py` from each module's"
    " docstring; edit the docstring, not these lines -->"
)
END = "<!-- END modules -->"
HOW = "run `python scripts/architecture.py` and commit ARCHITECTURE.md"


class Entry(NamedTuple):
    path: str  # "fontaine_tui/core/log/" for a package, "fontaine_tui/core/log/read.py"
    summary: str | None  # None: no docstring


def summary(path: Path) -> str | None:
    """A file's docstring's first paragraph on one line; None when it has none."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    if not doc or not doc.strip():
        return None
    first = doc.strip().split("\n\n")[0]
    return " ".join(line.strip() for line in first.splitlines())


def entries(root: Path = ROOT) -> list[list[Entry]]:
    """Each package's entries, in order: the package itself, then its modules."""
    folders: dict[Path, list[Path]] = {}
    for pkg in PKGS:
        for p in (root / pkg).rglob("*.py"):
            if "__pycache__" not in p.parts:
                folders.setdefault(p.parent, []).append(p)
    out = []
    for folder in sorted(folders, key=lambda f: (PKGS.index(f.relative_to(root).parts[0]), f)):
        init = folder / "__init__.py"
        about = summary(init) if init.exists() else None
        head = Entry(f"{folder.relative_to(root).as_posix()}/", about)
        mods = sorted(p for p in folders[folder] if p.name != "__init__.py")
        out.append([head] + [Entry(p.relative_to(root).as_posix(), summary(p)) for p in mods])
    return out


def render(packages: list[list[Entry]]) -> list[str]:
    lines = [BEGIN]
    for head, *mods in packages:
        lines += ["", f"### `{head.path}`", "", head.summary or ""]
        if mods:
            lines.append("")
        lines += [f"- `{m.path.rpartition('/')[2]}`: {m.summary}" for m in mods]
    return [*lines, "", END]


def parse(lines: list[str]) -> dict[str, str]:
    """The listing as written: each path's line."""
    found: dict[str, str] = {}
    package = ""
    for line in lines:
        if line.startswith("### `") and line.endswith("`"):
            package = line[5:-1]
            found[package] = ""
        elif line.startswith("- `") and "`: " in line:
            name, _, text = line[3:].partition("`: ")
            found[package + name] = text
        elif line and package and not found[package] and not line.startswith("<!--"):
            found[package] = line
    return found


def split(text: str) -> tuple[list[str], list[str], list[str]] | None:
    """ARCHITECTURE.md's lines before, inside (markers included) and after the listing."""
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("<!-- BEGIN modules")]
    ends = [i for i, line in enumerate(lines) if line == END]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        return None
    return lines[: starts[0]], lines[starts[0] : ends[0] + 1], lines[ends[0] + 1 :]


def differences(written: dict[str, str], packages: list[list[Entry]]) -> list[str]:
    now = {e.path: e.summary or "" for pkg in packages for e in pkg}
    out = []
    for path in sorted(now.keys() | written.keys()):
        if path not in written:
            out.append(f"{path}: not listed")
        elif path not in now:
            out.append(f"{path}: listed, no longer there")
        elif written[path] != now[path]:
            out.append(f"{path}: its docstring says {now[path]!r}, the listing {written[path]!r}")
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    doc = ROOT / DOC
    parts = split(doc.read_text(encoding="utf-8"))
    if parts is None:
        print(f"{DOC}: no single {BEGIN!r} ... {END!r} pair of lines to write the listing between")
        return 1
    before, inside, after = parts
    packages = entries()
    missing = [
        f"{e.path}: no docstring (its first line is what {DOC} lists)"
        for pkg in packages
        for e in pkg
        if e.summary is None
    ]
    if missing:
        print("\n".join(missing))
        return 1
    listing = render(packages)
    if listing == inside:
        return 0
    if check:
        said = differences(parse(inside), packages) or ["the listing's layout differs"]
        print(f"{DOC}'s module listing is not the docstrings' ({HOW}):")
        print("\n".join(f"  {line}" for line in said))
        return 1
    doc.write_text("\n".join([*before, *listing, *after]), encoding="utf-8")
    print(f"{DOC}: module listing written ({sum(len(p) for p in packages)} entries)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
