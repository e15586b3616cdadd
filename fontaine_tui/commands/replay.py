"""`fontaine-tui replay LOG --preset P`: a finished log fed as if live, fast or at a speed."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from fontaine_tui.commands._args import add_blind, examples, speed
from fontaine_tui.console import load_app, plain_instead, run_console
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.replay import ForeignReplay, ReplayRun
from fontaine_tui.core.log.formats.locate import foreign_spec
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import check_target, locate_log
from fontaine_tui.model.followed import follow_plain, guard, resolve_preset


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay",
        description="Feed a finished train_log.jsonl to the console as if it were being "
        "written: as fast as possible, or --speed X times its own time stamps.",
        epilog=examples(
            "fontaine-tui replay runs/r7",
            "fontaine-tui replay runs/r7 --speed 50",
            "fontaine-tui replay old/train_log.jsonl -p my-preset --plain",
            exits="with --plain the verdict's code (as `verdict`), 2 bad input",
        ),
    )
    p.add_argument("log", help="train_log.jsonl, or a run folder holding one")
    p.add_argument(
        "-p", "--preset", help="preset name or path (default: prereg.json beside the log)"
    )
    p.add_argument(
        "--speed",
        type=speed,
        metavar="X",
        help="replay at X times the log's own pace (default: as fast as possible)",
    )
    p.add_argument(
        "--plain",
        action="store_true",
        help="print records and the verdict line by line; exit at the end",
    )
    add_blind(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    args.log = check_target(args.log)  # a link to a log: the log it points to
    foreign = _foreign(args.log, args.preset, args.speed)
    if foreign is not None:
        return console_or_plain(foreign, args)
    log, _folder = locate_log(args.log)
    try:
        source = ReplayRun(log, speed=args.speed)
    except OSError as exc:
        raise InputError(f"{log}: cannot read ({exc.strerror})") from None
    return console_or_plain(source, args)


def console_or_plain(source, args: argparse.Namespace) -> int:
    """The replay in the console, or as plain lines (--plain, or no terminal to hold it)."""
    args.plain = plain_instead(args.plain)
    preset = asyncio.run(guard(source, resolve_preset(source, args.preset, args.plain)))
    if args.plain:
        return follow_plain(source, preset, "replay", blind=args.blind)
    try:
        load_app()
    except ImportError:
        asyncio.run(source.close())
        raise InputError("the console is not available in this build; use --plain") from None
    return run_console(source=source, preset=preset, mode="replay", blind=args.blind)


def _foreign(target: str, preset_arg: str | None, speed: float | None):
    """Another trainer's finished run, replayed through its format.

    Such a run is a folder without train_log.jsonl, or one read by a preset whose [source] is
    foreign.
    """
    path = Path(target)
    preset = load_preset(preset_arg) if preset_arg else None
    spec = foreign_spec(path, preset.source if preset else None, preset is not None)
    return ForeignReplay(path, spec, speed) if spec is not None else None
