"""Command line: the table of sub-commands, parsed with argparse, one module each.

`COMMANDS` names every sub-command, its module in `fontaine_tui.commands` and its one-line
help, in the order --help lists them. Only the chosen sub-command's module is imported (its
`register(sub)` adds its parser), so `fontaine-tui --help` imports none and
`fontaine-tui verdict --help` only the verdict's; this is the one place the command line
imports lazily. The console (Textual) loads only when a command opens it.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import sys
import traceback
from collections.abc import Iterable
from types import ModuleType
from typing import Any, NamedTuple, NoReturn, TextIO

from fontaine_tui import __version__, commands
from fontaine_tui.commands._args import HelpFormatter, examples
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.text import LiteralStream, literal

INTERNAL_ERROR = 70  # sysexits' EX_SOFTWARE: a bug of ours, not bad input (2) nor a verdict
DEBUG_ENV = "FONTAINE_DEBUG"  # =1: an internal error prints its whole traceback


class Command(NamedTuple):
    """A sub-command: its name, its module in fontaine_tui.commands, its line in --help."""

    name: str
    module: str
    help: str


COMMANDS = (
    Command(
        "demo",
        "demo",
        "replay a recorded run in the console: a first look, nothing to install or train",
    ),
    Command(
        "launch", "launch", "check the host, freeze the pre-registration, start and watch a run"
    ),
    Command("attach", "attach", "follow a run folder, here or on another machine over SSH"),
    Command("replay", "replay", "replay a finished log in the console (or as plain lines)"),
    Command("verdict", "verdict", "read a log against a preset's frozen bounds (headless)"),
    Command(
        "inspect",
        "inspect",
        "what a run folder holds: format, keys, probe cadence, end (and a preset)",
    ),
    Command("get", "get", "one metric's series from a run folder, as CSV or JSON (for scripts)"),
    Command("seal", "seal", "seal a run into one verifiable bundle (or write its report)"),
    Command("verify", "verify", "check a sealed bundle offline: hashes, chains, the verdict"),
    Command("amend", "amend", "declare a scale or extend amendment in a run's amendments.jsonl"),
    Command("bank", "bank", "bank a finished run as a comparator: bank add, bank list, bank show"),
    Command("presets", "presets", "list presets, or show one with its sha256"),
    Command("runs", "runs", "list launched and attached runs with live status"),
    Command("stop", "stop", "stop a launched run (SIGINT, then SIGTERM, then SIGKILL)"),
    Command(
        "babysit", "babysit", "watch detached runs: babysit polls and notifications, no console"
    ),
    Command("doctor", "doctor", "run the launch checks for a preset without launching"),
    Command("notify", "notify", "notification destinations: send a test message"),
)
_BY_NAME = {c.name: c for c in COMMANDS}


def command_module(name: str) -> ModuleType | None:
    """The module of the sub-command `name` (imported now), None for no such sub-command."""
    command = _BY_NAME.get(name)
    if command is None:
        return None
    return importlib.import_module(f"{commands.__name__}.{command.module}")


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:  # every --help keeps its examples
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse's own code)
        self.exit(2, f"{self.prog}: error: {message}\n")


class _Commands(argparse._SubParsersAction):
    """The sub-commands' action: a sub-command's parser gets its help line from COMMANDS."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if name in _BY_NAME:
            kwargs.setdefault("help", _BY_NAME[name].help)
        return super().add_parser(name, **kwargs)


def build_parser(chosen: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser, with every sub-command listed.

    The `chosen` sub-commands (None: all) have their whole parser and their module imported.
    The others stand in by name and help line only.
    """
    parser = _Parser(
        prog="fontaine-tui",
        description="Launch, watch and read pre-registered ML training runs.",
        epilog=examples(
            "fontaine-tui demo",
            "fontaine-tui launch my-preset",
            "fontaine-tui --ssh-config ~/.ssh/lab attach gpu1:/runs/r7",
            "fontaine-tui COMMAND --help",
        ),
    )
    parser.add_argument("--version", action="version", version=f"fontaine-tui {__version__}")
    parser.add_argument(
        "--ssh-config",
        metavar="FILE",
        help="ssh client config file (ssh -F FILE) for every SSH connection",
    )
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_Parser, action=_Commands
    )
    sub.required = True
    wanted = None if chosen is None else set(chosen)
    for command in COMMANDS:
        module = command_module(command.name) if wanted is None or command.name in wanted else None
        if module is not None:
            module.register(sub)
        else:  # listed by --help; parsing it takes what follows for the second parse
            sub.add_parser(command.name, add_help=False)
    return parser


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line parsed in two steps, the sub-command first, then its own parser.

    The first step imports no command module, so the top --help, --version and a usage error
    import none.
    """
    first, _ = build_parser(()).parse_known_args(argv)
    return build_parser((first.command,)).parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run one command and return its exit code.

    Its stdout and stderr go through `text.LiteralStream`, so whatever a report or an error
    line echoes (a preset's text, a registry field, a user's path) is shown, never obeyed by
    the terminal; a character their encoding cannot hold is written as `?` (`_replacing`).
    The console draws through Textual's own driver.

    An exception no command expected is a bug. It gives one escaped line and exit 70, and the
    traceback with FONTAINE_DEBUG=1, both through the same stream.
    """
    out, err = sys.stdout, sys.stderr
    kept = _replacing(out, err)
    sys.stdout, sys.stderr = LiteralStream(out), LiteralStream(err)
    try:
        return _main(argv)
    except SystemExit as exc:  # argparse: --help, --version, a usage error
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: never a raw traceback
        return _internal_error(exc)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = out, err
        for stream, errors in reversed(kept):
            stream.reconfigure(errors=errors)


# the error handlers that end a write on a character the encoding cannot hold; surrogateescape
# is Python's own on an ASCII locale (LC_ALL=C PYTHONUTF8=0) and only ever writes back a lone
# surrogate, which `LiteralStream` never lets through
_RAISING = ("strict", "surrogateescape")


def _replacing(*streams: TextIO) -> list[tuple[io.TextIOWrapper, str]]:
    """Set `streams` to write a character their encoding cannot hold as `?`.

    A latin-1 or ASCII stdout (PYTHONIOENCODING=latin-1, LC_ALL=C with PYTHONUTF8=0) cannot
    hold an em dash or a verdict's arrow: each shows as `?` instead of ending the command. An
    error handler the user chose (PYTHONIOENCODING=latin-1:backslashreplace) is kept, and so
    is a stream that is no `io.TextIOWrapper`. Returns each stream changed with its handler
    before, for `main` to put back.
    """
    changed = []
    for stream in streams:
        if isinstance(stream, io.TextIOWrapper) and stream.errors in _RAISING:
            changed.append((stream, stream.errors))
            stream.reconfigure(errors="replace")
    return changed


BROKEN_PIPE = 141  # the shell's code for a command its reader stopped reading (128 + SIGPIPE)


def _main(argv: list[str] | None) -> int:
    args = parse(_legacy(sys.argv[1:] if argv is None else list(argv)))
    try:
        code = args.func(args)
    except InputError as exc:
        print(f"fontaine-tui: error: {literal(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `| head`: what was cut may hold the read; 0 would say HEALTHY
        return BROKEN_PIPE
    return int(code or 0)


def _legacy(argv: list[str]) -> list[str]:
    """The command line rewritten into its current form.

    A command's module may take an older form for one release. Its `legacy(rest)` returns the
    new form of what follows the command, and says so on stderr.
    """
    at = 0
    while at < len(argv) and argv[at].startswith("-"):  # the global options
        at += 2 if argv[at] == "--ssh-config" else 1
    module = command_module(argv[at]) if at < len(argv) else None
    if module is None:
        return argv
    legacy = getattr(module, "legacy", None)
    return argv if legacy is None else [*argv[: at + 1], *legacy(argv[at + 1 :])]


def _internal_error(exc: BaseException) -> int:
    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        traceback.print_exception(exc, file=sys.stderr)
        hint = ""
    else:
        hint = f" (a bug in fontaine-tui; {DEBUG_ENV}=1 shows the traceback)"
    where = ""
    tb = traceback.extract_tb(exc.__traceback__)
    if tb:
        where = f" at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno}"
    text = literal(str(exc))
    text = text if len(text) <= 500 else text[:500] + "..."
    print(
        f"fontaine-tui: internal error: {type(exc).__name__}: {text}{where}{hint}", file=sys.stderr
    )
    return INTERNAL_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
