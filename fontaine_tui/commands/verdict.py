"""`fontaine-tui verdict LOG --preset P`: the headless read, with exit codes per class."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fontaine_tui.commands._args import examples
from fontaine_tui.core import runfolder
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.launch.rescore import score_offer
from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.formats.locate import foreign_spec
from fontaine_tui.core.log.read import default_workers, load_log
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict.head import head_path
from fontaine_tui.core.verdict.ledger import read_amendments
from fontaine_tui.core.verdict.prereg import frozen_over, read_prereg
from fontaine_tui.core.verdict.record import EXIT_CODES, PROVISIONAL_OFFSET
from fontaine_tui.core.verdict.rules import compute_verdict
from fontaine_tui.core.verdict.text import render

EPILOG = examples(
    "fontaine-tui verdict runs/r7",
    "fontaine-tui verdict runs/r7 --at-step 1500",
    "fontaine-tui verdict old/train_log.jsonl -p my-preset -j",
    exits=", ".join(f"{k} {c}" for k, c in EXIT_CODES.items())
    + f"; a PROVISIONAL read (before the endpoint) adds {PROVISIONAL_OFFSET}; 2 bad input",
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verdict",
        description="Read a train_log.jsonl (or a run folder) against a preset's rules.",
        epilog=EPILOG,
    )
    p.add_argument("log", help="train_log.jsonl, or a run folder holding one")
    p.add_argument(
        "-p", "--preset", help="preset name or path (default: the run folder's prereg.json)"
    )
    p.add_argument("-j", "--json", action="store_true", help="print verdict.json instead of text")
    p.add_argument("--at-step", type=int, metavar="N", help="read at probe step N")
    p.set_defaults(func=run)


def _preset_for(args: argparse.Namespace, folder: runfolder.RunFolder | None):
    """The preset to judge by, and the provenance frozen with it.

    A run folder's frozen pre-registration is the authority. A --preset that differs from it
    (beyond the machinery-only [platform] knobs) is refused, naming the keys. The provenance
    is None without a prereg.json.
    """
    if folder is not None and folder.prereg.exists():
        given = load_preset(args.preset) if args.preset else None
        prereg = read_prereg(folder)
        return frozen_over(prereg, given, args.preset, str(folder.prereg)), prereg.provenance
    if args.preset:
        return load_preset(args.preset), None
    raise InputError("--preset: expected a preset name or path (no prereg.json beside the log)")


def read_foreign(target: str, preset_arg: str | None):
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


def read_source(folder, preset, spec):
    """A foreign run's log read whole, its rule's metrics checked to be there."""
    loaded = load_source(folder, spec)
    loaded.check_metric(preset.verdict.metric, spec)
    for rule in preset.verdict.secondary:
        loaded.check_metric(rule.metric, spec)
    return loaded


def _ledger(folder: runfolder.RunFolder | None):
    if folder is None or not (folder.amendments.exists() or head_path(folder.amendments).exists()):
        return ()

    return read_amendments(folder)


def _frozen_folder(target: str) -> runfolder.RunFolder | None:
    """The run folder of `target` when it holds a prereg.json, else None.

    Its frozen pre-registration is then the authority, whatever a given preset's [source] says.
    """
    path = Path(target)
    folder = runfolder.RunFolder(path if path.is_dir() else path.parent)
    return folder if folder.prereg.exists() else None


def run(args: argparse.Namespace) -> int:
    runfolder.check_target(args.log)
    frozen = _frozen_folder(args.log)
    provenance = None
    if frozen is not None:  # frozen bounds, and the frozen [source] when it names one
        preset, provenance = _preset_for(args, frozen)
        spec = preset.source if preset.source and preset.source.kind != "fontaine" else None
        foreign = (preset, read_source(frozen.root, preset, spec)) if spec is not None else None
    else:
        foreign = read_foreign(args.log, args.preset)
    if foreign is not None:
        preset, loaded = foreign
        store, log_path, folder = loaded.store, loaded.label, frozen
    else:
        log, folder = runfolder.locate_log(args.log)
        log_path = str(log)
        if frozen is not None:
            folder = frozen  # a log beside a prereg.json: read with the frozen bounds
        else:
            preset, provenance = _preset_for(args, folder)
        try:
            # a run folder's log is read with its rotated segments (train_log.jsonl.1, ...)
            store = load_log(
                log, columns=False, workers=default_workers(), history=folder is not None
            )
        except OSError as exc:
            raise InputError(f"{log}: cannot read ({exc.strerror})") from None
    if args.at_step is not None and args.at_step not in store.probes:
        steps = ", ".join(map(str, store.probe_steps())) or "none"
        raise InputError(
            f"{log_path}: --at-step {args.at_step}: expected a probe step (probes: {steps})"
        )
    verdict = compute_verdict(store, preset, args.at_step, _ledger(folder), provenance)
    if args.json:
        sys.stdout.write(json.dumps(verdict.to_json(), indent=2) + "\n")
    else:
        sys.stdout.write(render(verdict, log_path) + "\n")
        if folder is not None:  # AMBIGUOUS-BY-INSTRUMENT: the re-score that disambiguates
            offer = score_offer(folder, verdict.verdict)
            if offer is not None:
                sys.stdout.write("\n" + "\n".join(map(literal, offer.describe())) + "\n")
    return verdict.exit_code
