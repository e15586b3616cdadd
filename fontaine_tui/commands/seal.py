"""`fontaine-tui seal RUN`: a run sealed into one verifiable bundle, or its report."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from fontaine_tui.commands._args import examples
from fontaine_tui.core.atomic import replace_own
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.runfolder import check_target
from fontaine_tui.core.seal.bundle import is_bundle, unpack
from fontaine_tui.core.seal.report import FORMATS, render
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict import blind, review
from fontaine_tui.model.judge import judge
from fontaine_tui.model.notices import RunNotices
from fontaine_tui.model.seal import Sealed, seal

SUFFIX = ".seal.zip"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "seal",
        description="Write one deterministic zip holding the run's prereg.json, its amendment "
        "and review chains, verdict.json computed now, the overlay chart, the provenance, the "
        "log when it is small enough, and MANIFEST.json (each file's sha256 and the bundle's "
        "digest). The digest is posted to the notification destinations. With --report, write "
        "a pre-registration report read from the bundle instead.",
        epilog=examples(
            "fontaine-tui seal runs/r7",
            "fontaine-tui seal runs/r7 -o r7.seal.zip",
            "fontaine-tui seal runs/r7 --report md -o r7-report.md",
            exits="0 sealed (or report written), 2 bad input",
        ),
    )
    p.add_argument("run", help="run folder (holding prereg.json)")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help=f"where to write (default: RUN/<run name>{SUFFIX}, or the report beside it)",
    )
    p.add_argument(
        "--report",
        choices=FORMATS,
        help="write a pre-registration report (Markdown or HTML) instead of the bundle",
    )
    p.add_argument(
        "--unblind",
        metavar="WHY",
        help="seal a blinded run before its endpoint: the look is recorded in review.jsonl "
        "(who and WHY) and sealed with it",
    )
    p.set_defaults(func=run)


def _record_look(target: str, why: str) -> None:
    """An early look at a blinded read, recorded before the bundle is made (as verdict does)."""
    judged = judge(target)
    if not blind.hidden(judged.preset, judged.verdict):
        sys.stderr.write("note: --unblind: the read is not blinded; nothing recorded\n")
        return
    if not blind.reason_ok(why.strip()):
        raise InputError(f"--unblind: {blind.REASON_RULE}")
    if judged.folder is None:
        raise InputError(f"{target}: no run folder to record the look in (review.jsonl)")
    review.record_look(judged.folder.root, judged.verdict, why)


def _say(line: str) -> None:
    sys.stderr.write(literal(line) + "\n")


def run(args: argparse.Namespace) -> int:
    args.run = check_target(args.run)
    if args.unblind is not None:
        _record_look(args.run, args.unblind)
    sealed = seal(args.run)
    if args.unblind is None and blind.hidden(sealed.judged.preset, sealed.judged.verdict):
        raise InputError(
            f"{args.run}: the read is blinded until the endpoint (step "
            f"{sealed.judged.verdict.endpoint_step}) and a bundle would hold it: seal after the "
            "endpoint, or with --unblind WHY (recorded); nothing was written"
        )
    # the run's name, made a plain file name: it comes from the run folder's prereg.json
    name = re.sub(r"[^A-Za-z0-9._-]", "_", sealed.judged.preset.run_name).lstrip(".") or "run"
    if args.report:
        _write_report(sealed, name, args.run, args.output, args.report)
    else:
        _write_bundle(sealed, name, args.run, args.output)
    return 0


def _write_report(sealed: Sealed, name: str, run: str, output: str | None, form: str) -> None:
    """The bundle's report in `form`, beside the run unless --output, over no foreign file."""
    text = render(unpack(sealed.data, "the bundle"), form)
    out = Path(output or Path(run) / f"{name}.report.{form}")
    replace_own(out, text, lambda head: head.startswith(_REPORT_HEADS), "a seal report")
    print(f"report: {literal(str(out))}  (bundle digest {sealed.digest})")


def _write_bundle(sealed: Sealed, name: str, run: str, output: str | None) -> None:
    """The sealed bundle, beside the run unless --output, over no foreign file; then its post."""
    out = Path(output or Path(run) / f"{name}{SUFFIX}")
    replace_own(out, sealed.data, lambda head: _a_bundle_at(out, head), "a sealed bundle")
    print(f"sealed: {literal(str(out))}")
    print(f"digest: {sealed.digest}")
    notices = RunNotices.configured(name, _say, sealed.judged.preset)
    if notices is not None:
        notices.sealed(out.name, sealed.digest)
        for line in notices.close():
            _say(line)


def _a_bundle_at(out: Path, head: bytes) -> bool:
    """Whether the file at `out` is a whole bundle: its head, then every entry read back."""
    if not is_bundle(head):
        return False
    try:
        unpack(read_whole(out, 1 << 30), str(out))
    except (InputError, OSError):
        return False  # another zip whose first entry is a bundle, or a damaged one
    return True


_REPORT_HEADS = (b"# Pre-registration report: ", b"<!DOCTYPE html>")
