"""`fontaine-tui get RUN --metric M`: one metric's series, for scripts and agents.

model/series.py reads the folder (ours or any format the tool reads) and writes the series:
CSV (a header line, one row per step, NaN as `nan`) or JSON (docs/json.md).

A blinded run (core/verdict/blind.py: `[verdict] blind = true` frozen in prereg.json) keeps its
probes' fields out of sight until the final read, as the console's probes screen does: the rule's
metrics (primary and secondary), their per-dataset split and the train slice are all probe
fields. `get` then refuses one with exit EXIT_BLINDED and one line, unless `--unblind WHY`,
which records the look in review.jsonl first, as `verdict --unblind` does. The train records'
metrics (loss, lr, ...) are health and stay readable.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fontaine_tui.commands._args import examples
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.target import parse_follow_target
from fontaine_tui.core.runfolder import RunFolder, check_target
from fontaine_tui.core.ssh.destination import SshTarget
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict import blind, review
from fontaine_tui.model.judge import Judged, blinded, preset_for
from fontaine_tui.model.metrics import PROBE
from fontaine_tui.model.series import Got, Steps, get, parse_steps


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "get",
        description="Print one metric's series from a run folder: ours, or any trainer's "
        "files the tool reads (as `inspect` reads them). CSV has a header line and one row per "
        "step the metric was logged at; a logged NaN is written nan, never a blank.",
        epilog=examples(
            "fontaine-tui get runs/r7 --metric eval_chunk_mae --csv",
            "fontaine-tui get runs/r7 --metric loss --steps 100:200 --json",
            "fontaine-tui get runs/hf-trainer --metric eval_loss --steps 500,1000 --json",
            "fontaine-tui get runs/r7 --metric eval_chunk_mae --unblind 'budget review'",
            exits=f"0 printed, 2 bad input (an unknown run or metric, a bad --steps), "
            f"{blind.EXIT_BLINDED} a blinded run's probe field before the endpoint (hidden)",
        ),
    )
    p.add_argument("run", help="a run folder (local)")
    p.add_argument("-m", "--metric", required=True, help="the metric (a key the run logged)")
    p.add_argument(
        "--steps",
        default="",
        metavar="A:B|A,B",
        help="a range of steps, both ends included (either may be left out), or a list "
        "(default: every step)",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("-j", "--json", action="store_true", help="one JSON document")
    out.add_argument("--csv", action="store_true", help="CSV (the default)")
    p.add_argument("--kind", default="", help="read it as this [source] kind")
    p.add_argument("--path", default="", help="the [source] path of one of several runs")
    p.add_argument(
        "--run", dest="run_id", default="", help="the [source] run of a store holding several"
    )
    p.add_argument(
        "--unblind",
        metavar="WHY",
        help="print a blinded run's probe field before the endpoint, recorded in review.jsonl "
        "with who (FONTAINE_USER, else the login name) and WHY",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if isinstance(parse_follow_target(args.run), SshTarget):
        raise InputError(f"{args.run}: get reads a local folder (run it on that host)")
    args.run = check_target(args.run)
    steps = parse_steps(args.steps) if args.steps else Steps()
    held: list[Judged | None] = []

    def hides() -> bool:  # asked of a probe field only: the blind hides no train series
        held.append(blinded(args.run))
        return held[0] is not None and args.unblind is None

    got = get(Path(args.run), args.metric, steps, hides, args.kind, args.path, args.run_id)
    if _blind_says_no(args, held[0] if got.kind == PROBE and held else None, got):
        return blind.EXIT_BLINDED
    if args.json:
        sys.stdout.write(json.dumps(got.to_json(), indent=2) + "\n")
    else:
        sys.stdout.write(got.to_csv())
    _write_notes(args.run, args.metric, got)
    return 0


def _blind_says_no(args: argparse.Namespace, hidden: Judged | None, got: Got) -> bool:
    """Whether the blind withholds `got` (its line said); a look with --unblind is recorded.

    `hidden`: the blinded run's judgement where `got` is a probe field it hides, else None."""
    if hidden is None:
        if args.unblind is not None:
            sys.stderr.write("note: --unblind: the values are not blinded; nothing recorded\n")
        return False
    if args.unblind is None:
        sys.stderr.write(literal(_hidden_line(args.run, got, hidden)) + "\n")
        return True
    if not blind.reason_ok(args.unblind.strip()):
        raise InputError(f"--unblind: {blind.REASON_RULE}")
    assert hidden.folder is not None  # a prereg.json was found in it
    review.record_look(hidden.folder.root, hidden.verdict, args.unblind)
    return False


def _write_notes(target: str, metric: str, got: Got) -> None:
    """The notes after the series: steps it was not logged at, conflicts, values not numbers."""
    if got.missing:
        shown = ", ".join(map(str, got.missing[:20])) + (" ..." if len(got.missing) > 20 else "")
        sys.stderr.write(literal(f"note: {metric} was not logged at step(s) {shown}") + "\n")
    if got.clashes:
        sys.stderr.write(literal(_conflicts_line(target, got)) + "\n")
    if got.not_numbers:
        sys.stderr.write(literal(_not_numbers_line(target, got)) + "\n")


def _conflicts_line(target: str, got: Got) -> str:
    """The steps of `got`'s series logged with different values, as the verdict says one.

    That the verdict reads such a step UNDECIDABLE is said only of a field its frozen rules read
    (prereg.json's): a conflict on another field is this series', not the verdict's field's."""
    at = [s for s, _ in got.clashes]
    shown = ", ".join(map(str, at[:20])) + (" ..." if len(at) > 20 else "")
    more = f" (and {len(at) - 1} more step(s))" if len(at) > 1 else ""
    line = (
        f"note: {got.metric} was logged with different values at step(s) {shown} (a row for "
        f"each value, the first logged first): {got.said[0]}{more}"
    )
    return line + _verdict_reads(target, got.key)


def _not_numbers_line(target: str, got: Got) -> str:
    """The steps of `got`'s series logged as a value that is not a number, as the verdict reads.

    That is NaN, and a read there UNDECIDABLE (said where the frozen rules read the field)."""
    at = [s for s, _ in got.not_numbers]
    shown = ", ".join(map(str, at[:20])) + (" ..." if len(at) > 20 else "")
    step, what = got.not_numbers[0]
    more = f" (and {len(at) - 1} more step(s))" if len(at) > 1 else ""
    line = (
        f"note: {got.metric} was logged as a value that is not a number at step(s) {shown} "
        f"(a row of nan, as the verdict reads it): at step {step} it is {what}{more}"
    )
    return line + _verdict_reads(target, got.key)


def _verdict_reads(target: str, key: str) -> str:
    """That the verdict reads `key`, and a read at such a step is UNDECIDABLE ("" otherwise).

    It is said only of a field the run's frozen rules read (prereg.json's)."""
    folder = RunFolder(Path(target))
    if folder.prereg.exists():
        rules = preset_for(folder, None)[0].verdict
        if key in {rules.metric, *(r.metric for r in rules.secondary)}:
            return f"; the verdict reads {key}: a read at such a step is UNDECIDABLE"
    return ""


def _hidden_line(target: str, got: Got, judged: Judged) -> str:
    """Why a probe field is not printed, and how to see it (recorded)."""
    v = judged.verdict
    at = f"step {v.read_step}" if v.read_step is not None else "no probe yet"
    return (
        f"{target}: {got.metric} is a probe's value, hidden while the run is blinded "
        f"([verdict] blind: {v.withheld or f'PROVISIONAL, {at} of {v.endpoint_step}'}); it shows "
        "at the endpoint, "
        f"or now with get {target} --metric {got.metric} --unblind WHY (recorded in review.jsonl)"
    )
