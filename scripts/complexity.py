"""Branching figures of a package: mean cyclomatic complexity and the share at CC >= 11.

    python scripts/complexity.py [PACKAGE_DIR ...]   (default: fontaine_tui)

Over every function and method radon finds (`radon cc -s -j`; radon is not a dependency of
the project: `pip install radon`), the way issue figures and anchors (other projects' source
folders, passed the same way) are measured. Prints one line per folder and its ten functions
of highest complexity.
"""

from __future__ import annotations

import json
import subprocess
import sys


def figures(root: str) -> tuple[int, float, float, list[tuple[int, str, str]]]:
    out = subprocess.run(["radon", "cc", "-s", "-j", root], capture_output=True, text=True)
    found = []
    for path, items in json.loads(out.stdout or "{}").items():
        if isinstance(items, dict):  # radon's error for a file it cannot parse
            continue
        for item in items:
            if item["type"] in ("function", "method"):
                found.append((item["complexity"], path, item["name"]))
    n = len(found)
    mean = sum(f[0] for f in found) / n if n else 0.0
    share = 100 * sum(f[0] >= 11 for f in found) / n if n else 0.0
    return n, mean, share, sorted(found, reverse=True)[:10]


def main(roots: list[str]) -> int:
    for root in roots or ["fontaine_tui"]:
        n, mean, share, top = figures(root)
        print(f"{root}: {n} functions, mean CC {mean:.2f}, CC >= 11 {share:.1f} %")
        for cc, path, name in top:
            print(f"  {cc:3d}  {path}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
