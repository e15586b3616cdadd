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

A resume this program starts (`launch RUN --resume`) keeps the frozen [source]'s files the same
way before the trainer starts (`before_resume`): a run nobody followed keeps its first attempt's
rows too. Only files rewritten in place are kept: a log appended to keeps its own rows. A copy
the same as the newest one kept is not written again.
"""

from __future__ import annotations

import re
from pathlib import Path

from fontaine_tui.core.atomic import create_new
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.locate import files, frozen_spec
from fontaine_tui.core.log.formats.registry import REWRITTEN, find
from fontaine_tui.core.log.formats.spec import SourceSpec
from fontaine_tui.core.readfile import read_whole
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
    kept = copies(folder, rel)
    if kept and _same(kept[-1], data):  # kept already (a resume's, then its follower's)
        return kept[-1]
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


def _same(path: Path, data: bytes) -> bool:
    try:
        return path.stat().st_size == len(data) and read_whole(path) == data
    except (OSError, InputError):
        return False


def rewritten(spec: SourceSpec) -> bool:
    """Whether `spec`'s files are kept: a file its writer rewrites in place, as followed.

    A log appended to (JSONL, W&B, event files) keeps its rows; a store is not a file's bytes."""
    fmt = find(spec.kind)
    return fmt is not None and fmt.follow == REWRITTEN and fmt.store is None


def before_resume(folder: Path) -> list[Path]:
    """Keep the frozen [source]'s files as they are now, before a resume starts the trainer.

    The copies written (or found kept already); none for a folder this program did not launch,
    ours, a kind appended to, or a log not written yet. A copy that cannot be written refuses
    the resume (InputError): the trainer would delete the rows it holds."""
    spec = frozen_spec(folder)
    if spec is None or not rewritten(spec):
        return []
    out: list[Path] = []
    try:
        paths = files(folder, spec)
    except (InputError, OSError):  # no log yet: nothing read to keep
        return []
    for path in paths:
        rel = relative(folder, path)
        if rel is None or not path.is_file():  # outside the run folder: not kept
            continue
        try:
            data = read_whole(path)
        except (OSError, InputError):
            continue
        try:
            copy = keep(folder, rel, data)
        except OSError as exc:  # resumed without them, the verdict would read half the run
            raise InputError(
                f"{path}: cannot keep its rows before the resume ({exc.strerror or exc})"
            ) from None
        if copy is not None:
            out.append(copy)
    return out


def relative(folder: Path, path: Path) -> str | None:
    """`path` relative to the run folder, or None for a file outside it."""
    try:
        return path.resolve().relative_to(folder.resolve()).as_posix()
    except (OSError, ValueError):
        return None
