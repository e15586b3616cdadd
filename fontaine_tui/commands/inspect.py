"""`fontaine-tui inspect RUN` shows what a run folder holds.

It shows the folder's format, every key with its steps, the probe cadence, the last step,
whether it ended and what could not be read. With --preset-out it writes a starting preset
for it. --json prints the document described in core/log/formats/inspect.py (schema 1).

On a blinded run before its endpoint (core/verdict/blind.py) it says no more of the hidden read
than `verdict` does: the conflicting probes and the eval values not numbers are counted, their
steps (where a read is UNDECIDABLE, which names the read's class) are not, and a probe field's
steps and NaN and non-number counts are hidden (blinded) (a NaN at the latest probe, too, reads
UNDECIDABLE there), and the words of its last end or error event that may quote the read.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from fontaine_tui.commands._args import examples
from fontaine_tui.core import readfile, runfolder
from fontaine_tui.core.atomic import atomic_write, create_new
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.target import parse_follow_target
from fontaine_tui.core.limits import PATTERN_FILE_BYTES
from fontaine_tui.core.log.formats.inspect import Inspection, inspect_run
from fontaine_tui.core.log.formats.printed import PATTERN_SETS, SlowPattern, compile_patterns
from fontaine_tui.core.log.formats.spec import SourceSpec
from fontaine_tui.core.preset.draft import draft
from fontaine_tui.core.ssh.destination import SshTarget
from fontaine_tui.core.verdict.blind import HIDDEN
from fontaine_tui.core.verdict.blindwords import rule_metrics, shown_words
from fontaine_tui.model.judge import blinded, launched_source


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "inspect",
        description="Show what a run folder holds (any format a preset's [source] reads), "
        "and write a starting preset for it with --preset-out.",
        epilog=examples(
            "fontaine-tui inspect runs/hf-trainer",
            "fontaine-tui inspect mlruns --run 3f2a -j",
            "fontaine-tui inspect runs/tb --kind tensorboard --preset-out mine.toml",
            "fontaine-tui inspect runs/lerobot --path train.log --patterns lerobot",
            exits="0 inspected, 2 bad input or nothing readable",
        ),
    )
    p.add_argument("run", help="a run folder (local)")
    p.add_argument("-j", "--json", action="store_true", help="print the inspection as JSON")
    p.add_argument("--kind", default="", help="read it as this [source] kind")
    p.add_argument("--path", default="", help="the [source] path of one of several runs")
    p.add_argument(
        "--run",
        dest="run_id",
        default="",
        help="the [source] run of a store holding several (MLflow)",
    )
    p.add_argument(
        "--patterns",
        metavar="FILE|NAME",
        default="",
        help="read printed lines with these patterns: a file of them (one a line) or a "
        f"built-in set ({', '.join(PATTERN_SETS)})",
    )
    p.add_argument(
        "--preset-out", metavar="FILE", help="write a starting preset (its bounds left to complete)"
    )
    p.add_argument("--metric", default="", help="the preset's metric (default: an eval key)")
    p.add_argument("--direction", default="", help="lower or higher (default: by its name)")
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    target = args.run
    if isinstance(parse_follow_target(target), SshTarget):
        raise InputError(
            f"{target}: inspect reads a local folder (copy the run here, or run "
            "fontaine-tui inspect on that host)"
        )
    target = runfolder.check_target(target)
    hidden, rule = _hidden(target)
    patterns, numbers = _patterns(args.patterns)
    frozen = _frozen(target)  # a launched run: read through its frozen [source]
    try:
        ins = inspect_run(
            Path(target), args.kind, args.path, args.run_id, hidden, rule, patterns, frozen=frozen
        )
    except SlowPattern as exc:  # a pattern of the file: its line there, and the log's
        if not numbers or not patterns or patterns[exc.index] != exc.text:
            raise
        log = args.path or "the log"
        raise InputError(
            f"{args.patterns} line {numbers[exc.index]}: --patterns: {exc.why} "
            f"on {log} line {exc.line}; refused"
        ) from None
    if hidden:  # the trainer's words at its end may quote the hidden read
        ins = _ended_shown(ins, rule or ())
    if args.preset_out:
        _write(Path(args.preset_out), draft(ins, args.metric, args.direction), args.force)
    if args.json:
        doc = ins.to_json()
        if args.preset_out:
            doc["preset_out"] = args.preset_out
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        _print_text(ins, target, args.preset_out)
    return 0


def _print_text(ins: Inspection, target: str, preset_out: str | None) -> None:
    """The report as text; after a --preset-out, the next step with the preset written."""
    sys.stdout.write("\n".join(render(ins)) + "\n")
    if preset_out:
        sys.stdout.write(
            f"\nwrote {preset_out}: complete its [verdict] bounds, then "
            f"fontaine-tui verdict {target} --preset {preset_out}\n"
        )


def _patterns(given: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """--patterns: a built-in set's name, else a file of patterns, one a line; and their lines.

    Blank lines and lines starting with # are passed over. The file is a regular one of at
    most PATTERN_FILE_BYTES, its patterns at most PATTERN_COUNT (core/limits.py). Refused
    (InputError, naming the file) where it cannot be read or a pattern is not one [source]
    patterns takes."""
    if not given or given in PATTERN_SETS:
        return ((given,) if given else ()), ()
    key = f"{given}: --patterns"
    try:
        text = readfile.read_whole(given, PATTERN_FILE_BYTES).decode("utf-8")
    except InputError as exc:  # not a regular file, or too big: its words after the name
        raise InputError(f"{key}: {str(exc).removeprefix(f'{given}: ')}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"{key}: neither a file that reads nor a built-in set "
            f"({', '.join(PATTERN_SETS)}): {getattr(exc, 'strerror', None) or exc}"
        ) from None
    kept = [
        (n, t)
        for n, line in enumerate(text.splitlines(), 1)
        if (t := line.strip()) and not t.startswith("#")
    ]
    lines = [t for _, t in kept]
    try:
        compile_patterns(lines, key)
    except ValueError as exc:
        raise InputError(": ".join(map(str, exc.args))) from None
    return tuple(lines), tuple(n for n, _ in kept)


def _frozen(target: str) -> SourceSpec | None:
    """A launched [command] run's frozen [source], as `verdict` reads it, else None.

    None too where its prereg.json does not read: the folder is then shown by what it holds,
    as `_hidden` shows it."""
    try:
        return launched_source(target)
    except InputError:
        return None


def _hidden(target: str) -> tuple[bool, tuple[str, ...] | None]:
    """Whether `verdict` hides the run's read (a frozen blind, before the endpoint), and why.

    The metrics its frozen rules read come with it, and its preset's labels (the names that
    may quote the read: core/verdict/blindwords.py's `rule_metrics`). A folder whose read
    cannot be judged (an unreadable prereg.json, log or ledger) counts as hidden, its rules'
    metrics not known (None): inspect still shows what it holds, and says nothing the blind
    might hide."""
    try:
        judged = blinded(target)
    except InputError:
        return True, None
    if judged is None:
        return False, ()
    return True, rule_metrics(judged.preset.verdict, judged.preset.labels)


def _ended_shown(ins: Inspection, metrics: tuple[str, ...]) -> Inspection:
    """The inspection with its last end or error event's words as a blinded run shows them.

    They are the trainer's (core/verdict/blindwords.py's `shown_words`): a crash's words may
    quote the read the blind hides."""
    if ins.ended is None:
        return ins
    return replace(
        ins, ended=replace(ins.ended, detail=shown_words(ins.ended.detail, metrics, True))
    )


def _write(path: Path, text: str, force: bool) -> None:
    """The preset, never over a file that is there unless --force."""
    if path.is_dir():
        raise InputError(f"{path}: --preset-out: a folder; expected a file name")
    try:
        if force:
            atomic_write(path, text)
        else:
            create_new(path, text)
    except FileExistsError:
        raise InputError(f"{path}: --preset-out: the file exists (--force replaces it)") from None
    except OSError as exc:
        raise InputError(f"{path}: --preset-out: cannot write ({exc.strerror or exc})") from None


def render(ins: Inspection) -> list[str]:
    """The inspection as plain text."""
    return [*_what_is_read(ins), "", *_key_table(ins), "", *_how_it_ends(ins)]


def _what_is_read(ins: Inspection) -> list[str]:
    """The folder, its format and files, the other runs or formats there, the step read.

    The step is said where it is not "step", or where a trainer's step key was there (which of
    it and the logger's row counter was read, and why)."""
    c = ins.chosen
    out = [
        f"run      {ins.folder}",
        f"format   {c.kind}" + (f" ({ins.detail})" if ins.detail else ""),
        f"files    {', '.join(ins.files[:3])}"
        + (f" and {len(ins.files) - 3} more" if len(ins.files) > 3 else ""),
    ]
    if len(ins.candidates) > 1:
        out.append(
            f"several runs or formats here ({len(ins.candidates)}); this one is read "
            "(--kind/--path/--run choose another), a preset names one in [source]:"
        )
        for cand in ins.candidates:
            mark = "*" if cand == c else " "
            out.append(
                f"  {mark} {cand.label()}" + (f"   {cand.describe}" if cand.describe else "")
            )
    if ins.step_why:
        out.append(f"step     {ins.step_why}")
    elif ins.step_key != "step":
        out.append(f"step key {ins.step_key!r} (not 'step': [source] step = {ins.step_key!r})")
    return out


def _key_table(ins: Inspection) -> list[str]:
    """One row per key (a blinded probe field's figures hidden, as `verdict` hides them)."""
    width = max([len(k.key) for k in ins.keys] + [3])
    out = [
        f"{'key':<{width}}  {'role':<5} {'first':>8} {'last':>8} {'count':>7} "
        f"{'nan':>5} {'not#':>5}"
    ]
    for k in ins.keys:
        if k.key in ins.hidden:
            out.append(f"{k.key:<{width}}  {k.role:<5} {HIDDEN:>8}")
            continue
        out.append(
            f"{k.key:<{width}}  {k.role:<5} {k.first:>8} {k.last:>8} {k.count:>7} "
            f"{k.nan:>5} {k.not_number:>5}"
        )
    return out if ins.keys else [*out, "(no keys)"]


def _how_it_ends(ins: Inspection) -> list[str]:
    """The probe cadence, the last step, the end or error record, and what was not read."""
    out = [f"probes   {ins.cadence.describe()}", f"last     step {ins.last_step}"]
    if (e := ins.ended) is None:
        out.append("ended    not known (no end or error record)")
    else:
        out.append(
            f"ended    {'cleanly' if e.event == 'end' else 'with an error'} at step "
            f"{e.step}" + (f" ({e.detail})" if e.detail else "")
        )
    if not ins.notices:
        return [*out, "unread   nothing"]
    return [*out, "unread   " + ins.notices[0], *(f"         {n}" for n in ins.notices[1:])]
