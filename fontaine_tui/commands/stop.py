"""`fontaine-tui stop RUN` stops a launched run from outside its console.

It sends SIGINT (the engine checkpoints and exits), then SIGTERM, then SIGKILL to its process
group, and records how the run ended (registry, attempts.jsonl). A console stops a run on
another host with this command run there.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from fontaine_tui.commands._args import examples, ssh_config
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.host.pgroup import pids_text
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.run.attempts import Attempt, read_attempts, stop_last
from fontaine_tui.core.run.exits import exit_to_dict
from fontaine_tui.core.run.launcher import process_label
from fontaine_tui.core.run.logtail import frozen_blind
from fontaine_tui.core.run.recovery import plan
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.verdict.prereg import read_prereg, utc_iso
from fontaine_tui.model.launched import LaunchedRun

EXIT_SCHEMA = "fontaine-tui/exit/1"  # `stop --json` (docs/json.md)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "stop",
        description="Stop a run of this host's registry by its name or run "
        "folder: SIGINT (the engine checkpoints and exits), SIGTERM after 60 s, "
        "SIGKILL after 30 more. A run already ended is said as recorded; nothing "
        "is sent. A run "
        "launched on another host with `launch --on` (its name or HOST:/folder) "
        "is stopped there, over SSH.",
        epilog=examples(
            "fontaine-tui stop r7",
            "fontaine-tui stop runs/r7 --yes -j",
            "fontaine-tui --ssh-config ~/.ssh/lab stop gpu1:/runs/r7",
            exits="0 stopped (or already ended), 2 bad input",
        ),
    )
    p.add_argument("run", help="a registered run's name or its run folder")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("-j", "--json", action="store_true", help="print the exit as one JSON line")
    ssh_config(p, "ssh client config file (ssh -F FILE) for a run on another host")
    p.set_defaults(func=run)


def find_entry(run: str, registry, host: str, missing_ok: bool = False):
    entries = [e for e in registry.entries() if e.host == host]
    folder = Path(run).expanduser()
    if folder.is_dir():
        found = [e for e in entries if Path(e.run_dir) == folder.resolve()]
    else:
        found = [e for e in entries if e.name == run]
    entry = _only(run, found)
    if entry is None and not missing_ok:
        raise InputError(f"{run}: not a run of this host's registry ({registry.path})")
    return entry


def find_remote(run: str, registry, host: str):
    """A run launched on another host from here (`launch --on`), or None when there is none.

    It is found by its name or by HOST:/folder.
    """
    entries = [e for e in registry.entries() if e.host != host]
    return _only(run, [e for e in entries if e.name == run or f"{e.host}:{e.run_dir}" == run])


def _only(run: str, found: list[Entry]) -> Entry | None:
    """The one registered run `run` names, None when it names none; refused when several."""
    if len(found) > 1:
        raise InputError(f"{run}: {len(found)} registered runs have this name; give its folder")
    return found[0] if found else None


def run(args: argparse.Namespace) -> int:
    registry, host = Registry(), hostname()
    entry = find_entry(args.run, registry, host, missing_ok=True)
    if entry is None:
        remote = find_remote(args.run, registry, host)
        if remote is not None:
            return stop_remote(remote, registry, args, host)
        entry = find_entry(args.run, registry, host)  # says why
    launched = LaunchedRun.from_registry(entry, registry, host)
    engine = launched.handle
    info = engine.poll()
    if info is not None:
        return ended(launched, info, entry, registry, args)
    if why := engine.refusal():
        raise InputError(f"stop {entry.name}: {why}")  # before asking: nothing is sent
    return _stop_running(launched, entry, registry, args)


def _stop_running(
    launched: LaunchedRun, entry: Entry, registry: Registry, args: argparse.Namespace
) -> int:
    """Stop a run still going here, once confirmed: its stop sequence, then its end recorded.

    What is stopped is named: the engine, or what it left running in its process group."""
    engine = launched.handle
    what = process_label(engine)
    if left := getattr(engine, "orphans", ()):  # what it started, running on without it
        what = f"{pids_text(left)}, left running in the process group of {what} (gone)"
    if not confirmed(args, entry.name, f"{what} in {entry.run_dir}"):
        return 0
    print(f"stopping {what} (SIGINT, then SIGTERM, then SIGKILL)", file=sys.stderr, flush=True)
    info = launched.stop()  # recorded as a user's stop first: [recovery] never restarts it
    return recorded(info, entry, registry, args)


def ended(launched: LaunchedRun, info, entry, registry, args: argparse.Namespace) -> int:
    """A run already gone: nothing sent, and its end as recorded (exit 0).

    An end attempts.jsonl records keeps its cause: said, nothing written (the registry only
    learns it where it still says running). An end nobody saw is recorded as seen now. Either
    is never a user's stop, except where the preset's [recovery] would restart the attempt
    (its restart waiting its backoff): the stop is recorded so that none is made."""
    last = _last_attempt(launched)
    if last is not None and last.ended:
        info = last.exit_info(getattr(launched.handle, "who", "engine"))
        _stop_restart(launched, last)
        if entry.status in ("running", "attached"):
            recorded(info, entry, registry, args, said=False)
        return said_ended(info, entry, args)
    launched.end_attempt(info)
    last = _last_attempt(launched)
    if last is not None and last.ended:
        _stop_restart(launched, last)
    recorded(info, entry, registry, args, said=False)
    return said_ended(info, entry, args)


def _last_attempt(launched: LaunchedRun) -> Attempt | None:
    if launched.folder is None:
        return None
    tried = read_attempts(launched.folder, alive=lambda pid, started: True)
    return tried[-1] if tried else None


def _stop_restart(launched: LaunchedRun, last: Attempt) -> None:
    """The user's stop recorded for an ended attempt a [recovery] restart would follow.

    That restart, waiting its backoff now, is then not made (one line said). An attempt
    whose end makes none (no [recovery], a crash, a stop already recorded) gets no stop line."""
    folder = launched.folder
    if folder is None or not _restart_follows(folder, last):
        return
    try:
        attempt = stop_last(folder)
    except OSError as exc:
        print(f"warn: attempts.jsonl: stop not recorded ({exc.strerror or exc})", file=sys.stderr)
        return
    if attempt is not None:
        print(
            f"recorded as a user's stop of attempt {attempt}: the [recovery] restart "
            "waiting its backoff is not made",
            file=sys.stderr,
        )


def _restart_follows(folder: RunFolder, last: Attempt) -> bool:
    """Whether the frozen preset's [recovery] restarts after `last`'s end, as a watcher would."""
    try:
        spec = read_prereg(folder).frozen_preset().recovery
    except (OSError, InputError):
        return False
    restart, _ = plan(spec, last.exit_info(), folder, last.number, RunStore())
    return restart is not None


def said_ended(info, entry, args: argparse.Namespace) -> int:
    """A run already ended, said: its cause and step, then its exit as `recorded` says it."""
    shown = frozen_blind(RunFolder(Path(entry.run_dir)))
    note = f"already ended ({info.cause} at step {info.last_step})"
    if args.json:
        print(f"{entry.name}: {note}; nothing sent", file=sys.stderr)
        print(json.dumps({"schema": EXIT_SCHEMA, **exit_to_dict(info, *shown)}, default=str))
    else:
        print(f"{note}: {info.describe(*shown)}")
    return 0


def confirmed(args: argparse.Namespace, name: str, what: str) -> bool:
    """--yes, or the user's yes at the terminal (none: InputError); "not stopped" said."""
    if args.yes:
        return True
    if not sys.stdin.isatty():
        raise InputError(f"stop {name}: confirm with --yes (no terminal to ask)")
    answer = input(f"stop {name} ({what})? [y/N] ")
    if answer.strip().lower() in ("y", "yes"):
        return True
    print("not stopped")
    return False


def recorded(
    info,
    entry,
    registry,
    args: argparse.Namespace,
    blind: tuple[tuple[str, ...], bool] | None = None,
    said: bool = True,
) -> int:
    """The exit into the registry, then said (one JSON line with --json).

    The trainer's words at its exit are said as a blind preset's run shows them, in the JSON
    too (the cause is judged from them as printed): `blind` is (the metrics its rules read,
    whether it is blind), else its frozen preset's in its folder here (`frozen_blind`)."""
    registry.update(
        entry.run_dir,
        entry.host,
        status=info.status,
        exit_code=info.code,
        last_step=max(info.last_step, entry.last_step),
        updated_at=utc_iso(time.time()),
    )
    if not said:
        return 0
    shown = frozen_blind(RunFolder(Path(entry.run_dir))) if blind is None else blind
    if args.json:
        print(json.dumps({"schema": EXIT_SCHEMA, **exit_to_dict(info, *shown)}, default=str))
    else:
        print(info.describe(*shown))
    return 0


def stop_remote(entry, registry, args: argparse.Namespace, this_host: str) -> int:
    """Stop a run on the host it was launched on.

    After confirmation here, `fontaine-tui stop` runs there over SSH (core/launch/remote.py).
    The registry here records the exit.
    """
    where = f"{entry.host}:{entry.run_dir}"
    if not entry.pid and not entry.job:
        raise InputError(
            f"{where}: attached, not launched from here (no pid or job known); "
            f"stop it on {entry.host}"
        )
    what = f"slurm job {entry.job}" if entry.job else f"engine pid {entry.pid}"
    if not confirmed(args, entry.name, f"{what} on {where}"):
        return 0
    options = ("-F", args.ssh_config) if getattr(args, "ssh_config", None) else ()
    launched = LaunchedRun.from_registry(
        entry, registry, this_host, ssh_options=options, poll_s=3600.0
    )
    print(
        f"stopping {what} on {entry.host} (SIGINT, then SIGTERM, then SIGKILL, over SSH)",
        file=sys.stderr,
        flush=True,
    )
    try:
        info = launched.stop()
    finally:
        launched.handle.close()
    # its words come hidden as its own prereg.json there says, its cause judged there from
    # them as printed (exits.exit_from_dict): a folder at its path here is not its folder
    return recorded(info, entry, registry, args, blind=((), False))
