"""`fontaine-tui launch PRESET` launches a run, then detaches or follows it.

The launch itself is in model/launched.py (guards, freeze, start, register). Then come
--detach, --json, --plain or the console.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from fontaine_tui.commands import verdict as verdict_cmd
from fontaine_tui.commands._args import add_blind, examples, ssh_config
from fontaine_tui.commands.attach import console_or_plain
from fontaine_tui.console import load_app, plain_instead, run_console, watch_remote
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import RunSource
from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.follow.open import open_source, run_source
from fontaine_tui.core.follow.ssh import SshRun
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.host.telemetry import sample
from fontaine_tui.core.launch.engine_argv import run_dir
from fontaine_tui.core.launch.targets.pick import pick_target
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run.attempts import read_attempts
from fontaine_tui.core.run.endpoint import nothing_to_resume
from fontaine_tui.core.run.exits import GATE_STOPS
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.ssh.destination import SshTarget
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict.prereg import compare, read_prereg
from fontaine_tui.model import restarts
from fontaine_tui.model.babysitter import Babysitter
from fontaine_tui.model.launched import Interrupted, LaunchedRun
from fontaine_tui.model.plain import PlainReport
from fontaine_tui.model.sampler import default_telemetry
from fontaine_tui.model.session import Session

EPILOG = examples(
    "fontaine-tui launch my-preset",
    "fontaine-tui launch my-preset --resume --output-dir runs/r7",
    "fontaine-tui launch my-preset --detach -j",
    "fontaine-tui launch my-preset --plain --once",
    exits="with --plain the verdict's code (as `fontaine-tui verdict`) when the engine "
    "finished, 1 when it did not, 2 when the launch was refused, 130 when detached by Ctrl-C "
    "(the run keeps going)",
)

LAUNCHED_SCHEMA = "fontaine-tui/launched/1"  # `launch --detach --json` (docs/json.md)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "launch",
        description="Check the host, freeze prereg.json, start the "
        "engine in its own session, register it, and watch it.",
        epilog=EPILOG,
    )
    p.add_argument("preset", help="preset name or path")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in its folder from its newest checkpoint",
    )
    p.add_argument(
        "--once",
        action="store_true",
        help="run the preset once in its folder, so the same command can be given again: a "
        "new folder is launched, a run stopped before its end resumed, and a run that finished "
        "read (its verdict, as `verdict`; the console, as `attach`) without training again",
    )
    p.add_argument(
        "--output-dir",
        metavar="DIR",
        help="run folder (default: the preset's run.output_dir, relative to the current folder)",
    )
    p.add_argument(
        "--plain",
        action="store_true",
        help="print records, warnings and the verdict line by line (no console)",
    )
    p.add_argument(
        "--yes-ram", action="store_true", help="launch even if the RAM check would refuse"
    )
    p.add_argument(
        "--declare-delta",
        action="append",
        default=[],
        metavar="KEY",
        help="launch although KEY (recipe.lr, platform.precision, ...) differs from the banked "
        "comparator outside the preset's verdict.delta_keys: recorded in amendments.jsonl as a "
        "declared delta, shown with the verdict (repeatable)",
    )
    p.add_argument(
        "--stop-on-exit",
        action="store_true",
        help="with --plain: Ctrl-C stops the engine instead of detaching",
    )
    p.add_argument(
        "--poll",
        type=float,
        default=2.0,
        metavar="S",
        help="seconds between process/telemetry polls (default 2)",
    )
    p.add_argument(
        "--detach",
        action="store_true",
        help="start, register and exit: the run goes on unwatched (babysit, attach)",
    )
    p.add_argument(
        "-j",
        "--json",
        action="store_true",
        help="with --detach: print the launched run as one JSON line",
    )
    p.add_argument(
        "--on",
        metavar="HOST",
        help="launch on HOST over SSH (its [hosts.HOST] in config.toml: project, "
        "python, env), then watch it from here; slurm:PARTITION submits the run "
        "as a Slurm batch job ([slurm] in config.toml: time, account, qos, ...)",
    )
    ssh_config(p, "with --on: ssh client config file")
    add_blind(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.poll <= 0:
        raise InputError(f"--poll: expected a positive number of seconds, got {args.poll}")
    options = ("-F", args.ssh_config) if args.on and args.ssh_config else ()
    preset = load_preset(args.preset)
    if args.once and (code := once(preset, args)) is not None:
        return code
    target = pick_target(args.on, options)
    try:
        launched = LaunchedRun.launch(
            target,
            preset,
            output_dir=args.output_dir,
            resume=args.resume,
            yes_ram=args.yes_ram,
            poll_s=args.poll,
            declared=tuple(args.declare_delta),
        )
    except Interrupted as exc:  # a Ctrl-C as it registered the run it had started
        try:
            return exc.run.interrupted()
        finally:
            exc.run.handle.close()
    launched.blind = args.blind
    try:
        return watch(launched, args, target, options)
    except Interrupted as exc:  # a restart [recovery] made, before its follower began
        return exc.run.interrupted()
    except KeyboardInterrupt:
        if launched.taken:  # the console or the follower had it: it said what it did
            raise
        # before the console drew (loading it takes seconds) or the follower began
        return launched.interrupted()
    finally:
        launched.handle.close()


def once(preset: Preset, args: argparse.Namespace) -> int | None:
    """--once: what the preset's folder needs for the run to have run once.

    A folder without prereg.json gets the launch (None), and so does one holding a run that
    stopped, was killed or crashed before its end, as a resume (`args.resume` set; one still
    running is refused by the launch's guards). A run that finished, or that its
    stop_on_lock gate stopped (its final read made), is read, not trained again: one line says so, then its verdict as `verdict` prints it (its exit code), or the
    console on it as `attach` opens it. A finished run of another version of the preset
    (its bounds or recipe changed) is refused: the folder's run is not this preset's."""
    if args.resume or args.on:
        raise InputError("--once: not with --resume or --on (it resumes a stopped run itself)")
    folder = RunFolder(run_dir(preset, args.output_dir).resolve())
    if not folder.prereg.exists():
        return None
    done = _ran_to_its_end(folder)
    if not done:
        args.resume = True
        return None
    change = compare(read_prereg(folder), preset)
    if change is not None and change.math_changed:
        raise InputError(
            f"--once: {folder.root} holds a finished run of another version of "
            f"{preset.name} ({change.message}); --output-dir DIR for a new run"
        )
    root = str(folder.root)
    print(
        literal(
            f"{preset.name} already ran to its end in {root} ({done}): "
            "its read, not trained again (--once)"
        ),
        flush=True,
    )
    return _show_read(root, args)


def _ran_to_its_end(folder: RunFolder) -> str:
    """How the folder's run reached its end (its final read made), or "" if it can resume.

    That is its end as `nothing_to_resume` reads it, or its last attempt stopped by its gate
    (a locked decision)."""
    done = nothing_to_resume(folder)
    ran = read_attempts(folder)
    if not done and ran and ran[-1].cause in GATE_STOPS:
        done = f"attempt {ran[-1].number} stopped by its gate: {ran[-1].cause}"
    return done


def _show_read(root: str, args: argparse.Namespace) -> int:
    """A finished run's read: its verdict as `verdict` prints it, or the console as `attach`."""
    if plain_instead(args.plain):
        return verdict_cmd.run(
            argparse.Namespace(
                log=root, preset=None, json=False, at_step=None, blind=args.blind, unblind=None
            )
        )
    view = argparse.Namespace(
        target=root, plain=False, until_end=False, quiet_end=None, blind=args.blind
    )
    return console_or_plain(open_source(root), None, "attach", view)


def watch(launched: LaunchedRun, args: argparse.Namespace, target, options) -> int:
    """What follows the launch: --detach, the far host's watch, the console or --plain.

    The run is `taken` (a Ctrl-C from then on leaves it going) once --detach said so, or
    once the console or the follower has it."""
    if args.detach:
        return _detach(launched, args.json and not target.remote, args.resume)
    print(launched.said(args.resume), flush=True)
    args.plain = plain_instead(args.plain)
    if target.remote:
        launched.taken = True  # its own watch says what a Ctrl-C did
        return watch_far(launched, args, options)
    if not args.plain:
        code = watch_here(launched)
        if code is not None:
            return code
    launched.restarter = restarts.plain(launched, args.poll, args.stop_on_exit)
    return launched.babysit_plain(args.poll, args.stop_on_exit)


def _detach(launched: LaunchedRun, as_json: bool, resume: bool) -> int:
    """--detach: the run left going, said as one JSON line (here, -j) or as its launch lines.

    The launch lines go with its launch post and how to reach it again."""
    if as_json:
        launched.handle.close()
        print(json.dumps({"schema": LAUNCHED_SCHEMA, **launched.as_json()}), flush=True)
        launched.taken = True
        return 0
    print(launched.said(resume), flush=True)
    launched.taken = True
    launched.handle.close()
    launched.announce()
    print(launched.hint())
    return 0


def watch_here(launched) -> int | None:
    """Watch a run launched here (or submitted to Slurm from here) in the console.

    Returns None when this build has no console (then --plain follows).
    """
    try:
        load_app()
    except ImportError as exc:  # pragma: no cover - the console lands separately
        print(f"no console ({exc}); following with --plain", file=sys.stderr)
        return None

    telemetry = None
    if launched.handle.pid:  # a Slurm job has no process here: the default sampler, of no pid

        def telemetry():
            engine = launched.handle  # a restart ([recovery]) puts its own in its place
            return sample(pid=None if engine.poll() else engine.pid)

    launched.restarter = restarts.in_console(launched)
    code = run_console(
        source=run_source(launched.run_dir, launched.preset.source),
        preset=launched.preset,
        mode="launch",
        launched=launched,
        registry=launched.registry,
        telemetry=telemetry,
        blind=launched.blind,
    )
    return launched.after_console(code)


def watch_far(launched, args: argparse.Namespace, options: tuple[str, ...]) -> int:
    """Watch a run launched on another host from here over SSH.

    It is watched in the console (quitting asks to stop it there or detach), or as plain lines
    until its log's end.
    """
    ssh = SshRun(SshTarget(launched.host, launched.run_dir), ssh_options=options)
    source: RunSource = ssh
    if launched.preset.foreign and launched.preset.source is not None:
        source = ForeignRun(launched.run_dir, launched.preset.source, transport=ssh)
    if not args.plain:
        return watch_remote(
            source, launched.preset, launched, announce=launched.announcement, blind=args.blind
        )

    where, what = launched.where
    session = Session(source, launched.preset, "attach")
    session.blind_asked = args.blind
    report = PlainReport(session, sampler=default_telemetry(source))
    # the log's end posts the final read; the watcher's polls are kept beside the registry
    sitter = Babysitter.for_session(
        report.session,
        "launch --plain",
        hostname(),
        report.say,
        auto_final=True,
        since=time.time() - 1.0,
    )
    report.watched_by(sitter)
    sitter.launched(launched.preset.name, where, what, launched.sha)
    try:
        code = asyncio.run(report.follow(until_end=True))
        # the log's end: its warnings said and the final read posted (auto_final)
        report.warnings.judge()
        return code
    except KeyboardInterrupt:
        print(
            f"detached: the run goes on on {launched.host}; fontaine-tui attach "
            f"{literal(str(where))}"
        )
        return 130
    finally:
        for line in sitter.close():
            print(line, file=sys.stderr)
