"""`fontaine-tui demo`: a recorded run of the reference recipe replayed into the console.

The run (fontaine_tui/demo/run: its train_log.jsonl and prereg.json) and its banked
comparator (fontaine_tui/demo/bank) were recorded with this package's engine by
scripts/record_demo.py. They are copied into a temporary folder, the comparator banked in a
temporary bank there (FONTAINE_BANK, for this process only), and the run replayed from the
copy: nothing is written into the installed package, the user's own bank or registry.
Nothing on this path imports torch.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from fontaine_tui.commands._args import examples, speed
from fontaine_tui.console import load_app, plain_instead, run_console
from fontaine_tui.core.bank import store as bank
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.replay import ReplayRun
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.runfolder import LOG, PREREG
from fontaine_tui.core.runs.registry import Registry
from fontaine_tui.core.verdict.text import headline, render
from fontaine_tui.model.followed import resolve_preset
from fontaine_tui.model.plain import PlainReport
from fontaine_tui.model.session import Session

DURATION_S = 10.0  # the default speed replays the whole recorded run in about this long
COMPARATOR = "demo_2rank_cpu"  # the banked run's name, as the recorded prereg.json pins it
EXPORT_FOLDER = "fontaine-demo-export"  # under the current folder: `e` writes here, kept


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        description="Replay a real recorded run of the reference recipe (300 steps of the "
        "tiny model in one process, read against a banked 2-rank run of the same recipe) "
        "in the console: the monitor, the probes chart, the verdict and the review keys. "
        "It runs from a temporary copy; your bank and registry are not touched. The "
        f"verdict screen's export (e) goes into ./{EXPORT_FOLDER}, kept after quitting.",
        epilog=examples(
            "fontaine-tui demo",
            "fontaine-tui demo --speed 4",
            "fontaine-tui demo --plain",
            exits="with --plain the verdict's code (as `verdict`)",
        ),
    )
    p.add_argument(
        "--speed",
        type=speed,
        metavar="X",
        help=f"replay at X times the run's own pace (default: the whole run in "
        f"about {DURATION_S:g} s)",
    )
    p.add_argument(
        "--plain",
        action="store_true",
        help="print the replayed records, then the verdict; exit with its code",
    )
    p.set_defaults(func=run)


def shipped() -> resources.abc.Traversable:
    """The recorded run and its comparator, as package data."""
    return resources.files("fontaine_tui") / "demo"


def unpack(into: Path) -> Path:
    """Copy the recorded run into `into`/run and bank its comparator in `into`/bank.

    Returns the run folder. Raises InputError when the package lacks its data (a build that
    left it out).
    """
    data = shipped()
    folder = into / "run"
    folder.mkdir()
    try:
        for name in (LOG, PREREG):
            (folder / name).write_bytes((data / "run" / name).read_bytes())
        doc = json.loads((data / "bank" / f"{COMPARATOR}.json").read_bytes())
    except FileNotFoundError as exc:
        raise InputError(
            f"{exc.filename}: the demo's recorded run is missing from this installation"
        ) from None
    bank.put_whole(COMPARATOR, doc, root=into / "bank")
    return folder


def default_speed(log: Path) -> float:
    """The speed that replays the log in about DURATION_S: its first to last time stamp."""
    stamps = []
    with open(log, "rb") as f:
        lines = f.read().splitlines()
    for line in (lines[0], lines[-1]) if lines else ():
        stamps.append(float(json.loads(line)["time"]))
    span = stamps[-1] - stamps[0] if len(stamps) == 2 else 0.0
    return max(span / DURATION_S, 1.0)


@dataclass(frozen=True)
class Staged:
    """The demo made ready in a temporary folder: what the console or the plain report takes."""

    source: ReplayRun
    preset: Preset
    registry: Registry
    folder: Path  # the copied run folder, removed on quit: review.jsonl goes here


@contextmanager
def staged(speed: float | None = None) -> Iterator[Staged]:
    """Stage the recorded run and its comparator in a temporary folder.

    The run is copied and its comparator banked and named by FONTAINE_BANK. The folder is
    removed afterwards. With `speed` None, the whole run plays in about DURATION_S.
    """
    with tempfile.TemporaryDirectory(prefix="fontaine-demo-") as tmp:
        root = Path(tmp)
        folder = unpack(root)
        with bank.bank_at(root / "bank"):
            log = folder / LOG
            source = ReplayRun(log, speed=speed or default_speed(log))
            preset = asyncio.run(resolve_preset(source, None))
            # a registry of its own: the runs mode lists no run of the user's, checks no host
            yield Staged(source, preset, Registry(root / "babysit.toml"), folder)


@contextmanager
def _signals_end_the_demo() -> Iterator[None]:
    """End the demo on a closed terminal (SIGHUP) or a SIGTERM as an exit would.

    Its temporary folder is then removed. The handlers before are put back afterwards.
    """

    def leave(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    old = {sig: signal.signal(sig, leave) for sig in (signal.SIGHUP, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def run(args: argparse.Namespace) -> int:
    with _signals_end_the_demo(), staged(args.speed) as demo:
        if plain_instead(args.plain):
            return _plain(demo.source, demo.preset)
        try:
            load_app()
        except ImportError:
            raise InputError("the console is not available in this build; use --plain") from None
        return run_console(
            source=demo.source,
            preset=demo.preset,
            mode="replay",
            registry=demo.registry,
            export_folder=Path.cwd() / EXPORT_FOLDER,  # the run's copy goes on quit
        )


def _plain(source, preset) -> int:
    session = Session(source, preset, "replay")
    asyncio.run(PlainReport(session).follow())
    verdict = session.latest()
    sys.stdout.write("\n" + render(verdict, "the demo run") + "\n\n")
    sys.stdout.write(f"demo verdict: {headline(verdict)}\n")
    return verdict.exit_code
