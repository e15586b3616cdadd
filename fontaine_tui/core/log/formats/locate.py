"""Where a foreign run's log is in a folder: the kind it holds, and the files to read.

`detect` tells the kind of log by a folder's contents (ours, a launched [command]'s frozen
[source], then each format's own look, in registry.py's `rank` order); `foreign_spec` picks how
to read a path named on the command line. `files` gives the files (or store) a [source] reads
under the run folder, in reading order (its format's finder, where.py), and refuses a folder
holding several runs (`SeveralRuns`, naming them).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.log.formats import where
from fontaine_tui.core.log.formats.eventdirs import EventFile, run_files
from fontaine_tui.core.log.formats.registry import find, formats
from fontaine_tui.core.log.formats.source import SourceSpec, read_spec
from fontaine_tui.core.log.formats.spec import frozen_path, read_at
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.runfolder import LOG, PREREG, rotated_segments


def frozen_spec(folder: Path) -> SourceSpec | None:
    """The [source] frozen in the folder's prereg.json when it names another trainer's log.

    Such a run is a launched [command]'s. Returns None for ours, or when there is none to read."""
    try:
        raw = read_whole(folder / PREREG, where.READ)
    except (OSError, InputError):
        return None
    return frozen_source(raw, str(folder / PREREG))


def frozen_source(raw: bytes, origin: str) -> SourceSpec | None:
    """The [source] frozen in prereg.json's bytes when it names another trainer's log.

    Its path is the one the launch read ({output_dir} filled in, spec.py's frozen_path). The
    bytes are read here or from another host. Returns None for ours, or for a prereg.json
    that does not say (its own reader refuses a bad one, naming it)."""
    try:
        doc = json_loads(raw)
        table = {
            k: v for k, v in doc["preset"]["source"].items() if k != "eval_every"
        }  # the preset's cadence, not how the log is read
        spec = read_at(read_spec(table, f"{origin}#source"), frozen_path(doc.get("provenance")))
    except (InputError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return spec if spec.kind != "fontaine" else None


def chosen_source(given: SourceSpec | None, frozen: SourceSpec | None) -> SourceSpec | None:
    """How a run folder is read, here or over SSH alike.

    That is a named preset's foreign [source], else the one its prereg.json froze (a launched
    [command]'s), else None (ours)."""
    return given if given is not None and given.kind != "fontaine" else frozen


def detect(folder: Path) -> str:
    """The kind of log a folder holds, by its contents; InputError when none is known."""
    if (folder / LOG).exists() or rotated_segments(folder / LOG):
        return "fontaine"  # ours (its log maybe rotated away)
    if (folder / PREREG).exists():  # launched here: a [command]'s frozen [source] says
        spec = frozen_spec(folder)
        return spec.kind if spec is not None else "fontaine"  # else ours, not started yet
    for fmt in sorted(formats(), key=lambda f: f.rank):
        if fmt.detect is not None and fmt.detect(folder):
            return fmt.name
    looked = [w for f in formats() for w in f.expected]
    raise InputError(
        f"{folder}: no log this console reads: expected {', '.join(looked[:-1])} or "
        f"{looked[-1]} (or a preset [source] naming the file)"
    )


def record_kind(folder: Path) -> str:
    """Another trainer's kind of log in `folder` as a finished run is kept, or "" (detect_foreign).

    A Trainer's output folder that reports to TensorBoard holds its own record
    (trainer_state.json, the keys `hf_trainer` reads: eval_loss) and event files of the same
    numbers under other keys (eval/loss). Followed live, the events are the newer (the record
    is written at each save); a finished run is kept by the Trainer's own record."""
    kind = detect_foreign(folder)
    return "hf_trainer" if kind == "tensorboard" and where.trainer_state_here(folder) else kind


def detect_foreign(folder: Path) -> str:
    """Another trainer's kind of log in `folder`, or "".

    "" means ours, or nothing known yet: a run of ours not started is read by the log wing's own
    reader, which waits for it."""
    try:
        kind = detect(folder)
    except InputError:
        return ""
    return "" if kind == "fontaine" else kind


def foreign_spec(
    path: Path, source: SourceSpec | None, preset_named: bool, files_too: bool = False
) -> SourceSpec | None:
    """How to read `path` when it is another trainer's run, or None when it is one of ours.

    The spec is the preset's foreign [source] (`source`), else the one its prereg.json froze
    (`chosen_source`), else what the folder holds (with `files_too`, also a single event file,
    trainer_state.json or metrics.csv named directly). A foreign run needs a preset (its bounds
    and metric): InputError when none was named."""
    frozen = frozen_spec(path) if path.is_dir() else None
    chosen = chosen_source(source, frozen)  # as over SSH (core/follow/open.py)
    if chosen is not None and chosen is frozen:
        return frozen  # a launched [command]'s run: its prereg.json is the preset
    spec = chosen if chosen is not None else _held_spec(path, files_too)
    if spec is None:
        return None
    if not preset_named:
        raise InputError(
            f"--preset: expected a preset name or path ({path} is a {spec.kind} "
            "run: the preset says how to read it)"
        )
    return spec


def _held_spec(path: Path, files_too: bool) -> SourceSpec | None:
    """The spec of another trainer's run that `path` holds, by what is there.

    A folder (not ours) by the files it holds; with `files_too`, a single file by its name.
    None where it is neither."""
    if path.is_dir() and not (path / LOG).exists() and (kind := detect_foreign(path)):
        return SourceSpec(kind)
    if files_too and path.is_file() and (kind := file_kind(path.name)):
        return SourceSpec(kind, str(path.resolve()))
    return None


def file_kind(name: str) -> str:
    """The kind a single file is by its name ("" when the name does not say)."""
    return next(
        (f.name for f in formats() if any(fnmatchcase(name, n) for n in f.names)),
        "",
    )


def _base(folder: Path, spec: SourceSpec) -> Path:
    base = Path(spec.path) if Path(spec.path).is_absolute() else folder / spec.path
    if spec.path and not base.exists():
        raise InputError(f"{base}: source.path: no such file or folder")
    return base


def event_files(folder: Path, spec: SourceSpec) -> list[EventFile]:
    """A TensorBoard run's event files under the run folder.

    Each comes with the prefix its tags are keyed under (eventdirs.py)."""
    return run_files(_base(folder, spec), spec.options.get("run", ""))


def files(folder: Path, spec: SourceSpec) -> list[Path]:
    """The files (or store) to read for `spec` under the run folder, in reading order."""
    fmt = find(spec.kind)
    finder = fmt.files if fmt is not None else where.our_log  # no record names it: ours
    return finder(folder, spec, _base(folder, spec))
