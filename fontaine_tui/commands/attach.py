"""`fontaine-tui attach TARGET`: follow a run here or over SSH, in the console or as plain lines."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.runfolder import AMENDMENTS, PREREG, RunFolder

ORDER = 20


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "attach",
        help="follow a run folder, here or on another machine over SSH",
        description="Follow a run's train_log.jsonl as it grows. TARGET is a run folder, "
        "[user@]host:/path/to/run or ssh://user@host:port/path (the system ssh client is "
        "used, so ~/.ssh/config, the agent and ProxyJump apply).",
    )
    p.add_argument("target", help="run folder, [user@]host:/path or ssh://[user@]host[:port]/path")
    p.add_argument("--preset", help="preset name or path (default: the run's prereg.json)")
    p.add_argument("--plain", action="store_true",
                   help="print records and the verdict line by line instead of the console")
    p.add_argument("--until-end", action="store_true",
                   help="with --plain: stop when the log records `event: end`")
    p.add_argument("--ssh-config", metavar="FILE", help="ssh client config file (ssh -F FILE)")
    p.set_defaults(func=run)


async def resolve_preset(source, preset_arg: str | None, strict: bool = True):
    """The frozen preset in the run's prereg.json, else --preset; InputError if neither.
    With `strict` (the plain report) a --preset that differs from the frozen one beyond
    [platform] is refused; the console takes it and shows the difference as a warning."""
    from fontaine_tui.core.verdict.prereg import frozen_over, parse_prereg
    from fontaine_tui.core.verdict.presets import load_preset

    raw = await source.read_bytes(PREREG)  # also proves the run folder is reachable
    given = load_preset(preset_arg) if preset_arg else None
    if raw is None:
        if given is None:
            raise InputError(f"{source.label}: no {PREREG} in the run folder; "
                             "name one with --preset P")
        return given
    origin = f"{source.label}/{PREREG}"
    prereg = parse_prereg(raw, origin)
    if not strict:
        return given if given is not None else prereg.frozen_preset(origin)
    return frozen_over(prereg, given, str(preset_arg), origin)


async def amendments_of(source) -> list:
    """The run's amendment ledger (read through the source, so remote runs work too)."""
    from fontaine_tui.core.verdict.ledger import read_amendments

    raw = await source.read_bytes(AMENDMENTS)
    if not raw:
        return []
    with tempfile.TemporaryDirectory(prefix="fontaine-ledger-") as tmp:
        (Path(tmp) / AMENDMENTS).write_bytes(raw)
        return read_amendments(RunFolder(Path(tmp)))


async def plain(source, preset, until_end: bool = False, out=None) -> int:
    """Records and the verdict headline as lines of text, until the source ends or `end`."""
    from fontaine_tui.core.log.records import Event, Probe
    from fontaine_tui.core.log.store import RunStore
    from fontaine_tui.core.verdict.rules import compute_verdict
    from fontaine_tui.core.verdict.text import headline
    from fontaine_tui.model.plain import describe_record
    from fontaine_tui.model.readout import literal

    out = out or sys.stdout

    def say(text: str) -> None:
        print(text, file=out, flush=True)

    steps = int(preset.recipe.get("steps", 0))
    store = RunStore()
    say(f"following {literal(source.label)}")
    try:
        async for batch in source.follow():
            if batch.segment:
                store.begin_segment(batch.name, batch.note)
            if batch.note:
                say(f"-- {literal(batch.note)}")
            ended = False
            ledger = None
            for i, raw in enumerate(batch.lines):
                if not raw.strip():
                    continue
                bad = store.malformed_count
                rec = store.add_line(raw, batch.first_line + i)
                if store.malformed_count > bad:
                    say(f"line {batch.first_line + i}: malformed ({store.malformed[-1].reason})"
                        if store.malformed else f"line {batch.first_line + i}: malformed")
                    continue
                text = describe_record(rec, steps)
                if text:
                    say(text)
                if isinstance(rec, Probe):  # the verdict as it reads the moment the probe lands
                    ledger = await amendments_of(source) if ledger is None else ledger
                    say(f"verdict: {headline(compute_verdict(store, preset, amendments=ledger))}")
                ended |= isinstance(rec, Event) and rec.event == "end"
            if ended and until_end:
                break
    finally:
        await source.close()
    return 0


def console_or_plain(source, preset_arg: str | None, mode: str, args: argparse.Namespace) -> int:
    preset = asyncio.run(_guard(source, resolve_preset(source, preset_arg, args.plain)))
    if args.plain:
        return asyncio.run(plain(source, preset, until_end=getattr(args, "until_end", False)))
    try:
        from fontaine_tui.console import run_console
    except ImportError:
        asyncio.run(source.close())
        raise InputError("the console is not available in this build; use --plain") from None
    return run_console(source=source, preset=preset, mode=mode)


async def _guard(source, coro):
    """Run a setup step; on bad input close the source first (no master left behind)."""
    try:
        return await coro
    except BaseException:
        await source.close()
        raise


def run(args: argparse.Namespace) -> int:
    from fontaine_tui.core.follow import open_source

    options = ("-F", args.ssh_config) if args.ssh_config else ()
    source = open_source(args.target, ssh_options=options)
    return console_or_plain(source, args.preset, "attach", args)
