"""Rows a follower read from a file its writer then rewrote shorter: the run folder's kept/.

A trainer may rewrite its log without the rows it wrote before: Lightning's CSVLogger, given
the same version, deletes metrics.csv when a run resumes from its checkpoint and writes rows
from the checkpoint's step on. A follower that read those rows keeps them (`keep`): the bytes
of its last whole read before the rewrite, in the run folder's kept/ under the file's own path
with a number (kept/csv/metrics.csv.1), written once and atomically, and only in a folder this
program launched (its prereg.json). The cold read feeds each kept copy to the file's decoder
before the file (`copies`), which reads a resume to the step before the later read's first
between them (base.py's `Whole`): the later attempt wins from its resume step on, and another
value it gives for a step before that is a conflict, as in a resumed log of our own.
"""

from __future__ import annotations

import re
from pathlib import Path

from fontaine_tui.core.atomic import create_new
from fontaine_tui.core.runfolder import PREREG

KEPT = "kept"


def copies(folder: Path, rel: str) -> list[Path]:
    """The kept copies of the file at `rel` (relative to the run folder), oldest first."""
    base = folder / KEPT / rel
    pattern = re.compile(re.escape(base.name) + r"\.([1-9][0-9]{0,5})")
    try:
        names = [p.name for p in base.parent.iterdir()]
    except OSError:
        return []
    found = {int(m.group(1)): base.parent / n for n in names if (m := pattern.fullmatch(n))}
    return [found[k] for k in sorted(found)]


def keep(folder: Path, rel: str, data: bytes) -> Path | None:
    """Keep `data`, the file `rel`'s last whole read, before its rewrite; the copy's path.

    None, nothing written, where `folder` is not a run folder this program launched."""
    if not (folder / PREREG).is_file() or not data:
        return None
    base = folder / KEPT / rel
    base.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(3):  # a copy made beside this one meanwhile takes the next number
        path = base.with_name(f"{base.name}.{len(copies(folder, rel)) + 1}")
        try:
            create_new(path, data)
        except FileExistsError:
            continue
        return path
    return None


def relative(folder: Path, path: Path) -> str | None:
    """`path` relative to the run folder, or None for a file outside it."""
    try:
        return path.resolve().relative_to(folder.resolve()).as_posix()
    except (OSError, ValueError):
        return None
