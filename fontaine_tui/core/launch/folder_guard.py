"""Whether a launch's run folder fits it: a fresh launch needs one without a launched run.

A --resume needs one that holds a launched run whose prereg.json the preset still matches in its
math, that has not finished, and (for the engine) a checkpoint to go on from. A launched
[command]'s [source] log already in a fresh folder would be read with the new run's."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from fontaine_tui.core.launch.findings import Finding
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run.endpoint import nothing_to_resume
from fontaine_tui.core.run.logtail import newest_checkpoint
from fontaine_tui.core.runfolder import RunFolder

if TYPE_CHECKING:
    from fontaine_tui.core.log.formats.spec import SourceSpec
    from fontaine_tui.core.verdict.prereg import BoundsChange, Prereg


def _source_inside(preset: Preset, folder: RunFolder) -> SourceSpec | None:
    """A launched [command]'s [source], where its log would be in the existing run folder.

    A store outside the folder (an absolute [source] path) is the user's to share between
    runs; the engine's own log is the folder's marks."""
    from fontaine_tui.core.launch.command import source_path

    spec = preset.source
    if preset.command is None or spec is None or spec.kind == "fontaine":
        return None
    spec = preset.source_at(source_path(preset, folder.root)).source  # {output_dir} filled in
    if spec is None or Path(spec.path).is_absolute() or not folder.root.is_dir():
        return None
    return spec


def _foreign_log_there(preset: Preset, folder: RunFolder) -> str:
    """What of a launched [command]'s [source] log a folder already holds; "" when none.

    Such a file is an earlier run's checkpoint or a stray *.jsonl."""
    from fontaine_tui.core.errors import InputError
    from fontaine_tui.core.log.formats.eventdirs import SeveralRuns
    from fontaine_tui.core.log.formats.locate import files

    spec = _source_inside(preset, folder)
    if spec is None:
        return ""
    try:
        found = [p for p in files(folder.root, spec) if p.exists()]
    except SeveralRuns as exc:  # several logs already: any of them would be read
        return f"{spec.kind} log ({', '.join(exc.found[:3])})"
    except (InputError, OSError):  # none there yet
        return ""
    if not found:
        return ""
    root = folder.root
    names = ", ".join(str(p.relative_to(root)) if root in p.parents else str(p) for p in found[:3])
    return f"{spec.kind} log ({names})"


def check_folder(
    preset: Preset, folder: RunFolder, resume: bool, running_pid: int | None = None
) -> list[Finding]:
    """A fresh launch needs a folder without a launched run; --resume needs one with it."""
    if running_pid is not None:
        return [
            Finding(
                "folder",
                "refuse",
                f"{folder.root}: this run is still running as pid "
                f"{running_pid} (fontaine-tui runs; stop it first)",
            )
        ]
    return _resume_folder(preset, folder) if resume else [_fresh_folder(preset, folder)]


def _fresh_folder(preset: Preset, folder: RunFolder) -> Finding:
    """A fresh launch's folder: no launched run's files, not a file, no [source] log in it."""
    root = folder.root
    there = (folder.prereg, folder.log, folder.checkpoints, folder.amendments)
    if marks := [p.name for p in there if p.exists()]:
        return Finding(
            "folder",
            "refuse",
            f"{root} already holds a launched run ({', '.join(marks)}); "
            "--resume to continue it, or --output-dir DIR for a new run",
        )
    if root.exists() and not root.is_dir():
        return Finding("folder", "refuse", f"{root}: exists and is not a folder")
    if found := _foreign_log_there(preset, folder):
        return Finding(
            "folder",
            "refuse",
            f"{root} already holds a {found}: a new run "
            "there would be read with it; --output-dir DIR for a new run",
        )
    return Finding("folder", "ok", f"run folder {root} (new)")


def _resume_folder(preset: Preset, folder: RunFolder) -> list[Finding]:
    """A --resume's folder: a launched run, the same math, not finished, and a checkpoint."""
    from fontaine_tui.core.errors import InputError
    from fontaine_tui.core.verdict.prereg import compare, read_prereg

    root = folder.root
    if not folder.prereg.exists():
        why = (
            "was not launched by fontaine-tui (no prereg.json)"
            if folder.log.exists()
            else "holds no launched run"
        )
        return [Finding("folder", "refuse", f"--resume: {root} {why}")]
    try:
        prereg = read_prereg(folder)
    except InputError as exc:
        return [Finding("bounds", "refuse", f"--resume: {exc}")]
    change = compare(prereg, preset)
    if change is not None and change.math_changed:
        return [Finding("bounds", "refuse", f"--resume: {change.message}")]
    if done := nothing_to_resume(folder):
        return [Finding("folder", "refuse", f"--resume: {root}: nothing to resume: {done}")]
    out = [_bounds_kept(prereg, change)]
    if preset.command is not None:  # its own trainer finds its checkpoints (resume_argv)
        return out
    return [*out, _checkpoint_to_resume(folder)]


def _bounds_kept(prereg: Prereg, change: BoundsChange | None) -> Finding:
    """The preset against prereg.json on a resume whose math is unchanged."""
    if change is None:
        return Finding(
            "bounds",
            "ok",
            f"preset matches prereg.json "
            f"(sha256 {prereg.preset_sha256[:12]}, launched {prereg.launched_at})",
        )
    return Finding(
        "bounds",
        "warn",
        f"{change.message} (machinery only: resuming; prereg.json keeps the launch-time preset)",
    )


def _checkpoint_to_resume(folder: RunFolder) -> Finding:
    """The engine's newest complete checkpoint, or that it starts again from step 0."""
    ckpt = newest_checkpoint(folder)
    if ckpt is None:
        return Finding(
            "folder",
            "warn",
            f"--resume: no complete checkpoint in "
            f"{folder.checkpoints}: the engine starts again from step 0",
        )
    return Finding("folder", "ok", f"--resume from {ckpt[1].name} (step {ckpt[0]})")
