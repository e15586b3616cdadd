"""`fontaine-tui amend RUN`: declare an amendment in the run's ledger, and say if it counts."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from fontaine_tui.commands._args import examples, positive
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import Amendment, Preset
from fontaine_tui.core.run.evidence import FolderEvidence, verdict_of
from fontaine_tui.core.runfolder import RunFolder, check_target
from fontaine_tui.core.text import literal, require_utf8
from fontaine_tui.core.verdict.ledger import (
    declare_amendment,
    foreign_step_seen,
    max_step_seen,
)
from fontaine_tui.core.verdict.record import AmendmentCheck
from fontaine_tui.model.judge import preset_for

_factor = positive("a positive factor (a finite number)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "amend",
        description="Append an amendment to RUN/amendments.jsonl (hash-chained from "
        "prereg.json) with the declaration time and the last step seen in the log. Every "
        "declaration is recorded; the verdict uses it only if it was declared before the step "
        "it first affects (a scale: the anchor probe, in a level read the first probe the log "
        "shows; an extend: the endpoint in force). "
        "Exit 0 when it is in force, 1 when it is recorded but refused.",
        epilog=examples(
            "fontaine-tui amend runs/r7 --scale-from-step 200 --text 'half batch'",
            "fontaine-tui amend runs/r7 --extend-to 3000 --text 'slow warm-up'",
            "fontaine-tui amend runs/r7 --scale-factor 1.25 -p my-preset",
            exits="0 in force, 1 recorded but refused, 2 bad input",
        ),
    )
    p.add_argument("run", help="run folder (holding prereg.json)")
    p.add_argument(
        "--scale-from-step",
        type=int,
        metavar="N",
        help="scale = this run's level at probe step N / the comparator's",
    )
    p.add_argument(
        "--comparator",
        metavar="NAME",
        help="comparator whose banked level is the denominator (default: the verdict's reference)",
    )
    p.add_argument("--scale-factor", type=_factor, metavar="F", help="a fixed scale factor")
    p.add_argument(
        "--extend-to",
        type=int,
        metavar="N",
        help="extend: move the endpoint to probe step N (reads after the old "
        "endpoint are PROVISIONAL until N)",
    )
    p.add_argument("--text", default="", help="why (kept in the ledger)")
    p.add_argument(
        "-p",
        "--preset",
        help="preset name or path when the folder has no prereg.json (else it must be the "
        "frozen one: a differing preset is refused)",
    )
    p.set_defaults(func=run)


def _store(folder: RunFolder, source: SourceSpec | None) -> RunStore:
    """The run's log read as the verdict reads it (empty before the log is written)."""
    if source is not None:
        return load_source(folder.root, source).store
    if not folder.log.exists():
        return RunStore()
    try:
        return load_log(folder.log, columns=False, history=True)
    except OSError as exc:
        raise InputError(f"{folder.log}: cannot read ({exc.strerror or exc})") from None


def run(args: argparse.Namespace) -> int:
    require_utf8(args.text, "--text")  # the ledger is UTF-8 JSON
    args.run = check_target(args.run)
    root = Path(args.run)
    if not root.is_dir():
        raise InputError(f"{root}: no such run folder")
    folder = RunFolder(root)
    # the frozen prereg.json over any -p, as `verdict` reads it (a differing one refused)
    preset, provenance = preset_for(folder, args.preset)
    source = preset.source if preset.source and preset.source.kind != "fontaine" else None
    seen = foreign_step_seen(root, source) if source is not None else max_step_seen(folder.log)
    amendment = _declare(args, folder, preset, seen)
    check = _status(folder, source, preset, provenance, amendment)
    print(
        f"amendment {amendment.id} ({_rule(amendment)}) recorded in "
        f"{literal(str(folder.amendments))}: declared at "
        f"{amendment.declared_at}, last step seen {seen}"
    )
    print(f"{check.status}: {literal(check.reason)}")
    return 0 if check.status == "applied" else 1


def _declare(args: argparse.Namespace, folder: RunFolder, preset: Preset, seen: int) -> Amendment:
    """The amendment the options declare, appended to the ledger (exit 2 if it cannot be)."""
    try:
        return declare_amendment(
            folder,
            kind="scale" if args.extend_to is None else "extend",
            from_step=args.scale_from_step,
            comparator=args.comparator,
            factor=args.scale_factor,
            to_step=args.extend_to,
            last_step_seen=seen,
            preset=preset,
            text=args.text,
        )
    except OSError as exc:
        raise InputError(
            f"{folder.amendments}: cannot write the amendment ledger ({exc.strerror or exc})"
        ) from None


def _status(
    folder: RunFolder,
    source: SourceSpec | None,
    preset: Preset,
    provenance: Mapping[str, object] | None,
    amendment: Amendment,
) -> AmendmentCheck:
    """The status the verdict gives the new amendment, read as the verdict reads the run."""
    store = _store(folder, source)  # the log's clock and first probe, as the verdict reads them
    ctx = FolderEvidence.of_folder(folder, provenance)
    every = [*preset.amendments, *ctx.amendments]
    checks = verdict_of(store, preset, ctx).amendments
    return next(
        c
        for a, c in zip(every, checks, strict=True)
        if a.source == "ledger" and a.id == amendment.id
    )


def _rule(amendment: Amendment) -> str:
    """What the amendment does, in words."""
    if amendment.kind == "extend":
        return f"extend the endpoint to {amendment.to_step}"
    if amendment.comparator == "":
        return f"fixed factor {amendment.factor:g}"
    return f"scale from step {amendment.from_step} against {amendment.comparator}"
