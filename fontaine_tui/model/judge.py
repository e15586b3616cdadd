"""A run's verdict computed as `fontaine-tui verdict` computes it (verdict, seal, verify).

It is the one owner of the frozen prereg.json over a given preset (`preset_for`: verdict,
amend), of the frozen [source] a launched run is read through (`launched_source`: get,
inspect) and of a blinded run's hidden read (`blinded`: get, bank add). `RECORDS`, with
`Judged.reads` and `Judged.banked`, names the files a verdict reads: what seal carries, and
nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core import runfolder
from fontaine_tui.core.bank.store import BankedRun
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats import kept
from fontaine_tui.core.log.formats.cold import Loaded, load_source
from fontaine_tui.core.log.formats.locate import files as source_files
from fontaine_tui.core.log.formats.locate import foreign_spec
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.log.read import default_workers, load_log
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run.evidence import FolderEvidence, verdict_of
from fontaine_tui.core.verdict import blind
from fontaine_tui.core.verdict.head import head_name
from fontaine_tui.core.verdict.prereg import blind_frozen, frozen_over, read_prereg
from fontaine_tui.core.verdict.record import Verdict

# The run folder's records a verdict reads beside its evidence: the frozen pre-registration,
# the amendment and review chains with their heads, and attempts.jsonl (a stop on the
# stop_on_lock gate, the restarts [recovery] made). `Judged.reads` names those a run holds and
# its evidence; `seal` carries exactly these, and the banked runs its comparators were read from.
RECORDS = (
    runfolder.PREREG,
    runfolder.AMENDMENTS,
    head_name(runfolder.AMENDMENTS),
    runfolder.REVIEW,
    head_name(runfolder.REVIEW),
    runfolder.ATTEMPTS,
)


@dataclass(frozen=True, slots=True)
class Judged:
    """A verdict, the preset it was read by, the log it read and the run folder if any."""

    verdict: Verdict
    preset: Preset
    log_path: str
    folder: runfolder.RunFolder | None

    def reads(self) -> list[Path]:
        """Every file of the run this verdict read: the RECORDS its folder holds, then the evidence.

        The evidence is the log and its rotated segments, or each file another trainer's
        [source] reads, each by the path it was read through (a link is named, not followed),
        each after the copies a follower kept of it before its writer rewrote it (kept.py),
        which the cold read feeds first."""
        if self.folder is None:
            return [Path(self.log_path)]
        root = self.folder.root
        held = [root / name for name in RECORDS if (root / name).is_file()]
        spec = self.preset.source
        if spec is None or spec.kind == "fontaine":
            log = Path(self.log_path)
            return [*held, *runfolder.rotated_segments(log), log]
        read = [f for p in source_files(root, spec) for f in _files_at(p)]
        return held + list(dict.fromkeys(k for f in read for k in [*_kept_of(root, f), f]))

    def banked(self) -> list[BankedRun]:
        """The banked runs its comparators were read from (those the bank here holds)."""
        found = {c.entry.ref: c.entry for c in self.preset.comparators.values() if c.entry}
        return [found[ref] for ref in sorted(found)]


def _kept_of(root: Path, path: Path) -> list[Path]:
    """The copies of a [source] file kept in the run folder's kept/ (read before it), if any.

    A file under kept/ itself (a [source] folder holding it) has none of its own."""
    rel = kept.relative(root, path)
    if rel is None or rel.split("/")[0] == kept.KEPT:
        return []
    return kept.copies(root, rel)


def _files_at(path: Path) -> list[Path]:
    """A [source] path's files: a folder's every file under it, sorted; a file itself."""
    return sorted(q for q in path.rglob("*") if q.is_file()) if path.is_dir() else [path]


def preset_for(
    folder: runfolder.RunFolder | None, preset_arg: str | None
) -> tuple[Preset, Mapping[str, object] | None]:
    """The preset a run folder is read (and amended) by, and the provenance frozen with it.

    A run folder's frozen pre-registration is the authority. A --preset that differs from it
    (beyond the machinery-only [platform] knobs) is refused, naming the keys. The provenance
    is None without a prereg.json. `verdict`, `amend` and every reader of a folder call this.
    """
    if folder is not None and folder.prereg.exists():
        given = load_preset(preset_arg) if preset_arg else None
        prereg = read_prereg(folder)
        return frozen_over(prereg, given, str(preset_arg), str(folder.prereg)), prereg.provenance
    if preset_arg:
        return load_preset(preset_arg), None
    raise InputError("--preset: expected a preset name or path (no prereg.json beside the log)")


def read_foreign(target: str, preset_arg: str | None) -> tuple[Preset, Loaded] | None:
    """A run another trainer wrote, as (preset, the source read), or None for one of ours.

    One of ours is a train_log.jsonl, or a folder holding one, read by the preset without a
    foreign [source]. The kind is the preset's [source], else detected from the folder.
    """
    path = Path(target)
    preset = load_preset(preset_arg) if preset_arg else None
    spec = foreign_spec(path, preset.source if preset else None, preset is not None, True)
    if spec is None or preset is None:
        return None
    return preset, read_source(path if path.is_dir() else path.parent, preset, spec)


def read_source(folder: Path, preset: Preset, spec: SourceSpec) -> Loaded:
    """A foreign run's log read whole, its rule's metrics checked to be there."""
    loaded = load_source(folder, spec)
    loaded.check_metric(preset.verdict.metric, spec)
    for rule in preset.verdict.secondary:
        loaded.check_metric(rule.metric, spec)
    return loaded


def _frozen_folder(target: str) -> runfolder.RunFolder | None:
    """The run folder of `target` when it holds a prereg.json, else None.

    Its frozen pre-registration is then the authority, whatever a given preset's [source] says.
    """
    folder = runfolder.folder_of(target)
    return folder if folder.prereg.exists() else None


def judge(target: str, preset_arg: str | None = None, at_step: int | None = None) -> Judged:
    """The verdict of the run at `target` (a log or a run folder), as `verdict --json` says it.

    Raises InputError for what cannot be read, with one line naming the file.
    """
    target = runfolder.check_target(target)  # a link to a log: the log it points to
    frozen = _frozen_folder(target)
    provenance = None
    if frozen is not None:  # frozen bounds, and the frozen [source] when it names one
        preset, provenance = preset_for(frozen, preset_arg)
        foreign = _frozen_source(frozen, preset)
    else:
        foreign = read_foreign(target, preset_arg)
    if foreign is not None:
        preset, loaded = foreign
        store, log_path, folder = loaded.store, loaded.label, frozen
    else:
        log, folder = runfolder.locate_log(target)
        log_path = str(log)
        if frozen is not None:
            folder = frozen  # a log beside a prereg.json: read with the frozen bounds
        else:
            preset, provenance = preset_for(folder, preset_arg)
        store = _read_log(log, folder)
    _check_at_step(store, at_step, log_path)
    where = Path(target)
    # the ledger, the gate's stop, the review trail and the restarts: read by the one gate
    ctx = FolderEvidence.of_folder(
        folder, provenance, review_of=str(where if where.is_dir() else where.parent)
    )
    return Judged(verdict_of(store, preset, ctx, at_step), preset, log_path, folder)


def _frozen_source(frozen: runfolder.RunFolder, preset: Preset) -> tuple[Preset, Loaded] | None:
    """The log a frozen [source] names, read; None where the run writes our own log."""
    spec = _foreign_source(preset)
    return (preset, read_source(frozen.root, preset, spec)) if spec is not None else None


def _foreign_source(preset: Preset) -> SourceSpec | None:
    """The preset's [source] where it names another trainer's log (None: ours)."""
    return preset.source if preset.source and preset.source.kind != "fontaine" else None


def launched_source(target: str) -> SourceSpec | None:
    """The [source] a launched [command] run's folder is read through, as `verdict` reads it.

    That is its frozen preset's (`preset_for`), patterns, eval rule and {output_dir} path
    filled in: `get` and `inspect` read a launched run through it, never through what the folder
    seems to hold (the files this program writes there are no run's log). None for a folder
    without a prereg.json, or a run writing our own log; InputError (one line naming it) for a
    prereg.json that does not read."""
    frozen = _frozen_folder(target)
    return None if frozen is None else _foreign_source(preset_for(frozen, None)[0])


def _read_log(log: Path, folder: runfolder.RunFolder | None) -> RunStore:
    """Our own log read whole; a run folder's with its rotated segments (train_log.jsonl.1...)."""
    try:
        return load_log(log, columns=False, workers=default_workers(), history=folder is not None)
    except OSError as exc:
        raise InputError(f"{log}: cannot read ({exc.strerror})") from None


def _check_at_step(store: RunStore, at_step: int | None, log_path: str) -> None:
    """--at-step must name a step the log holds a probe at."""
    if at_step is not None and not store.has_probe(at_step):
        steps = ", ".join(map(str, store.probe_steps())) or "none"
        raise InputError(
            f"{log_path}: --at-step {at_step}: expected a probe step (probes: {steps})"
        )


def blinded(target: str) -> Judged | None:
    """The run's verdict when its frozen preset is blind and the read hidden, else None.

    That is a PROVISIONAL read of a run folder whose prereg.json says `blind = true`, read as
    `verdict` reads it (with its review trail). Every surface that would print or keep a probe's
    value (`get`, `bank add`) asks this first."""
    folder = runfolder.folder_of(target)
    if not folder.prereg.exists():
        return None
    if not blind_frozen(read_prereg(folder).preset):
        return None
    judged = judge(target)
    return judged if blind.hidden(judged.preset, judged.verdict) else None
