"""Command line: argparse subcommands that call core functions or open the console.

Each module in `fontaine_tui.commands` adds its own subcommand through `register(sub)`;
its `ORDER` places it in --help. Heavy imports (Textual, psutil) happen inside the
command, so `fontaine-tui --help` stays fast and never imports torch.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import traceback
from typing import NoReturn

from fontaine_tui import __version__, commands
from fontaine_tui.commands._args import HelpFormatter, examples
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.text import LiteralStream, literal

INTERNAL_ERROR = 70  # sysexits' EX_SOFTWARE: a bug of ours, not bad input (2) nor a verdict
DEBUG_ENV = "FONTAINE_DEBUG"  # =1: an internal error prints its whole traceback


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:  # every subcommand's --help: its examples kept
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse's own code)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
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
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    modules = [
        importlib.import_module(f"{commands.__name__}.{info.name}")
        for info in pkgutil.iter_modules(commands.__path__)
        if not info.name.startswith("_")
    ]
    for module in sorted(modules, key=lambda m: (getattr(m, "ORDER", 99), m.__name__)):
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command. Its stdout and stderr go through `text.LiteralStream`: whatever a
    report or an error line echoes (a preset's text, a registry field, a user's path) is shown,
    never obeyed by the terminal. The console draws through Textual's own driver.

    An exception no command expected is a bug: one escaped line and exit 70, the traceback
    with FONTAINE_DEBUG=1, both through the same stream."""
    out, err = sys.stdout, sys.stderr
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


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(_legacy(sys.argv[1:] if argv is None else list(argv)))
    try:
        code = args.func(args)
    except InputError as exc:
        print(f"fontaine-tui: error: {literal(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return int(code or 0)


def _legacy(argv: list[str]) -> list[str]:
    """The command line in its current form: a command's module may take an older form for one
    release (its `legacy(rest)` returns the new form of what follows the command, and says so
    on stderr)."""
    at = 0
    while at < len(argv) and argv[at].startswith("-"):  # the global options
        at += 2 if argv[at] == "--ssh-config" else 1
    if at >= len(argv) or not argv[at].isidentifier():
        return argv
    try:
        module = importlib.import_module(f"{commands.__name__}.{argv[at]}")
    except ImportError:
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
