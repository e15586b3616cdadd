"""`fontaine-tui verdict LOG --preset P`: the headless read, with exit codes per class."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace

from fontaine_tui.commands._args import examples
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.launch.rescore import score_offer
from fontaine_tui.core.preset.checks import HEALTHY
from fontaine_tui.core.run.evidence import READ_SHOWN, trail_refusal
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict import blind, review
from fontaine_tui.core.verdict.record import EXIT_CODES, PROVISIONAL_OFFSET, Verdict
from fontaine_tui.core.verdict.text import render, render_blinded
from fontaine_tui.model.judge import Judged, judge

BLINDED_SCHEMA = "fontaine-tui/blinded/1"  # `verdict -j` on a hidden read (docs/verdict-json.md)
# A shipped preset's own word for a class, named in the help: (preset, label, class). A label
# renames the class where the verdict is shown; the exit code stays the class's.
LABEL_EXAMPLE = ("pretrain_so101", "LEARNED", HEALTHY)
_PRESET, _LABEL, _CLASS = LABEL_EXAMPLE

EPILOG = examples(
    "fontaine-tui verdict runs/r7",
    "fontaine-tui verdict runs/r7 --at-step 1500",
    "fontaine-tui verdict old/train_log.jsonl -p my-preset -j",
    "fontaine-tui verdict runs/r7 --unblind 'the GPU-hours gate needs a decision'",
    exits=", ".join(f"{k} {c}" for k, c in EXIT_CODES.items())
    + f"; a PROVISIONAL read (before the endpoint) adds {PROVISIONAL_OFFSET}; "
    "a class renamed by a preset's [labels] keeps its code "
    f"({_PRESET}: {_LABEL} is {_CLASS}, exit {EXIT_CODES[_CLASS]}); "
    f"{blind.EXIT_BLINDED} a blinded PROVISIONAL read (hidden); 2 bad input, "
    "or a ledger or review trail that does not hold",
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
    p.add_argument(
        "--blind",
        action="store_true",
        help="hide a PROVISIONAL read (values, delta, verdict) as [verdict] blind = true does",
    )
    p.add_argument(
        "--unblind",
        metavar="WHY",
        help="show a blinded PROVISIONAL read; in a run folder, recorded in review.jsonl with "
        "who (FONTAINE_USER, else the login name) and WHY",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    judged = judge(args.log, args.preset, args.at_step)
    hidden = blind.hidden(judged.preset, judged.verdict, args.blind)
    if hidden and args.unblind is None:
        return _blinded(args, judged)
    verdict = _looked(args, judged, hidden)
    if args.json:
        sys.stdout.write(json.dumps(verdict.to_json(), indent=2) + "\n")
    else:
        _print_read(verdict, judged)
    # as a broken amendment chain: exit 2 naming it; the verdict itself is the evidence's
    refused = trail_refusal(verdict.review, READ_SHOWN)
    if refused:
        raise InputError(refused)
    return verdict.exit_code


def _looked(args: argparse.Namespace, judged: Judged, hidden: bool) -> Verdict:
    """The verdict to show: a pre-registered blind's read with --unblind WHY is recorded first.

    --unblind on a read that is not hidden records nothing, and says so."""
    verdict, folder = judged.verdict, judged.folder
    if not hidden:
        if args.unblind is not None:
            sys.stderr.write("note: --unblind: the read is not blinded; nothing recorded\n")
        return verdict
    if not blind.reason_ok(args.unblind.strip()):
        raise InputError(f"--unblind: {blind.REASON_RULE}")
    if not judged.preset.verdict.blind:  # --blind asked here: no look to record
        return verdict
    if folder is None:
        raise InputError(
            f"--unblind: {args.log} has no run folder to record the look in (review.jsonl)"
        )
    review.record_look(folder.root, verdict, args.unblind)
    return replace(verdict, review=review.state(folder.root))


def _print_read(verdict: Verdict, judged: Judged) -> None:
    """The read as text; in a run folder, the re-score an AMBIGUOUS-BY-INSTRUMENT read offers."""
    sys.stdout.write(render(verdict, judged.log_path) + "\n")
    if judged.folder is None:
        return
    offer = score_offer(judged.folder, verdict.verdict)
    if offer is not None:
        sys.stdout.write("\n" + "\n".join(map(literal, offer.describe())) + "\n")


def _blinded(args: argparse.Namespace, judged: Judged) -> int:
    """A hidden read: what is still shown, and exit EXIT_BLINDED (2 on a broken trail)."""
    verdict = judged.verdict
    if args.json:
        doc = {
            "schema": BLINDED_SCHEMA,
            "blinded": True,
            "provisional": verdict.provisional,
            # why a read that is not PROVISIONAL is hidden ("" when it is PROVISIONAL)
            "withheld": verdict.withheld,
            "read_step": verdict.read_step,
            "endpoint_step": verdict.endpoint_step,
            "metric": verdict.metric,
            "preset": dict(verdict.preset),
            "review": None
            if verdict.review is None
            else {"intact": verdict.review.intact, "lines": verdict.review.lines},
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write(render_blinded(verdict, judged.log_path, args.log) + "\n")
    refused = trail_refusal(verdict.review)
    if refused:
        raise InputError(refused)
    return blind.EXIT_BLINDED
