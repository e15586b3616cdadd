"""`fontaine-tui attach TARGET`: follow a run here or over SSH, in the console or as plain lines."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from fontaine_tui.commands._args import add_blind, examples, seconds, ssh_config
from fontaine_tui.console import load_app, plain_instead, run_console, watch_remote
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.follow.open import open_source, remote_source
from fontaine_tui.core.follow.target import FollowTarget, LocalFolder, parse_follow_target
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.log.formats.locate import foreign_spec
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import check_target
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.ssh.destination import SshTarget
from fontaine_tui.core.text import literal
from fontaine_tui.model.followed import follow_plain, guard, resolve_preset
from fontaine_tui.model.launched import LaunchedRun


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "attach",
        description="Follow a run's train_log.jsonl as it grows. TARGET is a run folder, "
        "[user@]host:/path/to/run or ssh://user@host:port/path (the system ssh client is "
        "used, so ~/.ssh/config, the agent and ProxyJump apply).",
        epilog=examples(
            "fontaine-tui attach runs/r7",
            "fontaine-tui attach gpu1:/runs/r7 --plain --until-end",
            "fontaine-tui --ssh-config ~/.ssh/lab attach ssh://me@gpu1:2222/runs/r7",
            "fontaine-tui attach --latest --plain",
            exits="with --until-end or --quiet-end the verdict's code (as `verdict`), 2 bad input",
        ),
    )
    p.add_argument(
        "target",
        nargs="?",
        help="run folder, [user@]host:/path or ssh://[user@]host[:port]/path",
    )
    p.add_argument(
        "--latest",
        action="store_true",
        help="attach to the most recently launched registered run (this host or another); "
        "which one is said in one line",
    )
    p.add_argument("-p", "--preset", help="preset name or path (default: the run's prereg.json)")
    p.add_argument(
        "--plain",
        action="store_true",
        help="print records and the verdict line by line instead of the console",
    )
    p.add_argument(
        "--until-end",
        action="store_true",
        help="with --plain: stop at the run's end: the log's `end` or `error` event "
        "(an MLflow run's status says it); for another trainer's run also the final "
        "read (the probe at the endpoint); exit with the verdict's code",
    )
    p.add_argument(
        "--quiet-end",
        type=seconds,
        metavar="S",
        help="with --plain: stop when no new data came for S seconds, and exit with "
        "the verdict's code",
    )
    ssh_config(p)
    add_blind(p)
    p.set_defaults(func=run)


def remember(target: str, preset, mode: str) -> None:
    """Put an attached run into the registry with status "attached".

    Then `runs` and the babysitter see it. A run already there (launched, or attached before)
    is left as it is.
    """
    if mode != "attach":
        return
    try:
        parsed = parse_follow_target(target)
        run_dir, host = _registry_key(parsed)
        registry = Registry()
        # a foreign run has no prereg.json: its preset's file is how `runs` reads it again
        named = (
            str(Path(preset.path).resolve())
            if preset.foreign and preset.path and isinstance(parsed, LocalFolder)
            else preset.name
        )
        if registry.find(run_dir, host) is None:
            registry.upsert(
                Entry(
                    name=preset.run_name,
                    run_dir=run_dir,
                    host=host,
                    preset=named,
                    preset_sha256=preset.sha256,
                    status="attached",
                )
            )
    except (InputError, OSError) as exc:
        print(f"warn: not registered ({exc})", file=sys.stderr)


def _registry_key(parsed: FollowTarget) -> tuple[str, str]:
    """(run folder, host) a followed run is registered by: a log file's folder, here or there."""
    if not isinstance(parsed, LocalFolder):
        return parsed.path, parsed.registry_host
    folder = Path(parsed.folder).resolve()
    return str(folder.parent if folder.name == "train_log.jsonl" else folder), hostname()


def console_or_plain(source, preset_arg: str | None, mode: str, args: argparse.Namespace) -> int:
    if getattr(args, "quiet_end", None) is not None and not args.plain:
        asyncio.run(source.close())
        raise InputError("--quiet-end: only with --plain (the console follows until you quit)")
    args.plain = plain_instead(args.plain)
    preset = asyncio.run(guard(source, resolve_preset(source, preset_arg, args.plain)))
    remember(args.target, preset, mode)
    if args.plain:
        return follow_plain(
            source,
            preset,
            mode,
            getattr(args, "until_end", False),
            getattr(args, "quiet_end", None),
            getattr(args, "blind", False),
        )
    try:
        load_app()
    except ImportError:
        asyncio.run(source.close())
        raise InputError("the console is not available in this build; use --plain") from None
    options = getattr(args, "ssh_options", ())
    launched = launched_there(args.target, options)
    if launched is None:
        return run_console(
            source=source,
            preset=preset,
            mode=mode,
            ssh_options=options,
            blind=getattr(args, "blind", False),
        )

    return watch_remote(source, preset, launched, blind=getattr(args, "blind", False))


def launched_there(target: str, ssh_options: tuple[str, ...]):
    """A run this host launched on another host (`launch --on`), or None for anything else.

    It is found again from the registry (model/launched.py), so the console can stop it there.
    """
    try:
        parsed = parse_follow_target(target)
    except InputError:
        return None
    if not isinstance(parsed, SshTarget):
        return None
    return LaunchedRun.from_other_host(parsed.registry_host, parsed.path, ssh_options)


def latest_target(registry: Registry) -> tuple[str, Entry]:
    """The most recently launched registered run, as attach's TARGET, and its entry.

    Runs are ordered by when they were launched (an attached run: when it was registered);
    a tie goes to the later line of the registry. No run: an InputError."""
    entries = registry.entries()
    if not entries:
        raise InputError(f"--latest: no registered run in {registry.path}")
    _, _, e = max((e.launched_at or e.updated_at, i, e) for i, e in enumerate(entries))
    if e.host == hostname():
        return e.run_dir, e
    if e.host.startswith("ssh://"):
        return e.host + e.run_dir, e
    return f"{e.host}:{e.run_dir}", e


def run(args: argparse.Namespace) -> int:
    if args.latest and args.target is not None:
        raise InputError("--latest: give a TARGET or --latest, not both")
    if args.latest:
        _take_latest(args)
    elif args.target is None:
        raise InputError("attach: expected a TARGET (a run folder, host:/path) or --latest")
    args.target = check_target(args.target)  # a host:path that is no local path passes
    options = ("-F", args.ssh_config) if args.ssh_config else ()
    args.ssh_options = options
    source = _foreign(args.target, args.preset, options) or open_source(
        args.target, ssh_options=options
    )
    return console_or_plain(source, args.preset, "attach", args)


def _take_latest(args: argparse.Namespace) -> None:
    """--latest: the newest registered run as the target (and its preset, another trainer's).

    Says which run it is, and when it was launched."""
    args.target, entry = latest_target(Registry())
    if args.preset is None and entry.preset.endswith(".toml"):
        args.preset = entry.preset  # another trainer's run: the preset it was attached with
    when = entry.launched_at or entry.updated_at or "at an unknown time"
    print(literal(f"attaching to {entry.name} at {args.target} (launched {when})"))


def _foreign(target: str, preset_arg: str | None, ssh_options: tuple[str, ...] = ()):
    """A run folder another trainer writes, followed through its format.

    Locally, such a folder has no train_log.jsonl or is named by a preset whose [source] is
    foreign. Over SSH, the source is chosen as here (core/follow/open.py `remote_source`): a
    preset's foreign [source], else the one the run's prereg.json froze, else our own log.
    The following is done by core/follow/foreign.py.
    """
    parsed = parse_follow_target(target)
    preset = load_preset(preset_arg) if preset_arg else None
    if not isinstance(parsed, LocalFolder):
        return asyncio.run(remote_source(parsed, preset.source if preset else None, ssh_options))
    folder = Path(parsed.folder)
    spec = foreign_spec(folder, preset.source if preset else None, preset is not None)
    return ForeignRun(folder, spec) if spec is not None else None
