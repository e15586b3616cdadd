"""A run's ledger as the console shows it: prereg.json's hash check and its amendments.

The files are read from the run folder, or through the run's source for a run on another
host; `ledger_from` parses them into a `Ledger` and gives the preset a read computes with:
the frozen one once prereg.json is read. `review_folder` says which folder holds a run's
record files (prereg.json, amendments, review.jsonl, verdict.json).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import RunSource
from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.follow.replay import ForeignReplay, ReplayRun
from fontaine_tui.core.preset.record import Amendment, Preset
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.runfolder import AMENDMENTS, PREREG
from fontaine_tui.core.verdict.head import head_name
from fontaine_tui.core.verdict.ledger import genesis, parse_ledger
from fontaine_tui.core.verdict.prereg import BoundsChange, compare, parse_prereg


@dataclass(frozen=True, slots=True)
class Ledger:
    launched_at: str
    preset_sha256: str
    hash_status: str  # "matches prereg.json", "bounds changed after launch: ...", or why unknown
    hash_ok: bool | None
    amendments: tuple[Amendment, ...]
    error: str = ""
    provenance: Mapping[str, object] | None = None  # as frozen in prereg.json


@dataclass(frozen=True, slots=True)
class LedgerFiles:
    """prereg.json, amendments.jsonl and its head as read (None: not there or unreadable)."""

    prereg: bytes | None
    amendments: bytes | None
    head: bytes | None
    note: str = ""  # why a file could not be read ("" when every file could)


async def read_ledger_files(folder: Path | None, source: RunSource) -> LedgerFiles:
    """The ledger's files, read from the run folder or through the source.

    The source is used when there is no folder here, so a run over SSH has its ledger too.
    """
    files: dict[str, bytes | None] = {}
    note = ""
    for name in (PREREG, AMENDMENTS, head_name(AMENDMENTS)):
        if folder is not None:
            path = folder / name
            try:
                files[name] = read_whole(path) if path.exists() else None
            except (OSError, InputError) as exc:
                files[name] = None
                note = (
                    f"{path}: cannot read ({exc.strerror})"
                    if isinstance(exc, OSError)
                    else str(exc)
                )
        else:
            files[name] = await source.read_bytes(name)
    return LedgerFiles(files[PREREG], files[AMENDMENTS], files[head_name(AMENDMENTS)], note)


def ledger_from(
    files: LedgerFiles, where: str, given: Preset | None, preset: Preset
) -> tuple[Ledger, Preset]:
    """The ledger the files hold, and the preset to compute with.

    The preset is prereg.json's frozen one when it parses, else `preset`. `given` is the
    preset the command line or registry named (None for a stand-in), and it is compared with
    the frozen one.
    """
    amendments: tuple[Amendment, ...] = ()
    error = ""
    if files.amendments or files.head:  # the amendments before a break count; it is shown
        read = parse_ledger(
            files.amendments or b"", f"{where}/{AMENDMENTS}", genesis(files.prereg), files.head
        )
        amendments, error = read.amendments, read.broken
    launched, status, ok = "", "no prereg.json beside the log", None
    provenance: Mapping[str, object] | None = None
    if files.prereg is not None:
        try:
            pr = parse_prereg(files.prereg, f"{where}/{PREREG}")
            launched, provenance = pr.launched_at, pr.provenance
            change = compare(pr, given) if given is not None else None
            # the frozen pre-registration is the authority: compute with its bounds
            preset = pr.frozen_preset()
            status, ok = _hash_status(change)
        except InputError as exc:
            status, ok = str(exc), False
    return Ledger(launched, preset.sha256, status, ok, amendments, error, provenance), preset


def _hash_status(change: BoundsChange | None) -> tuple[str, bool]:
    """How the preset given compares with prereg.json's, in words, and whether its bounds hold."""
    if change is None:
        return "matches prereg.json", True
    if change.math_changed:
        return (
            f"the preset given differs from the frozen prereg.json "
            f"({change.detail}): computing with the frozen bounds"
        ), False
    return (
        f"matches prereg.json (the preset given differs only in [platform]: {change.detail})",
        True,
    )


def review_folder(source: RunSource) -> Path | None:
    """Where review.jsonl and verdict.json go, or None for a run on another host.

    That is the run folder (ours, or another trainer's followed or replayed here), or the
    replayed log's folder.
    """
    if isinstance(source, LocalRun):
        return source.folder
    if isinstance(source, ReplayRun):
        return source.log.parent
    if isinstance(source, ForeignRun | ForeignReplay) and not getattr(source, "remote", False):
        return source.folder if source.folder.is_dir() else source.folder.parent
    return None
