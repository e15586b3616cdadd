"""Command line: argparse subcommands that call core functions or open the console.

Each module in `fontaine_tui.commands` adds its own subcommand through `register(sub)`;
its `ORDER` places it in --help. Heavy imports (Textual, psutil) happen inside the
command, so `fontaine-tui --help` stays fast and never imports torch.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from typing import NoReturn

from fontaine_tui import __version__, commands
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.text import LiteralStream


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse's own code)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="fontaine-tui",
        description="Launch, watch and read pre-registered ML training runs.",
    )
    parser.add_argument("--version", action="version", version=f"fontaine-tui {__version__}")
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
    never obeyed by the terminal. The console draws through Textual's own driver."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = LiteralStream(out), LiteralStream(err)
    try:
        return _main(argv)
    except SystemExit as exc:  # argparse: --help, --version, a usage error
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = out, err


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except InputError as exc:
        print(f"fontaine-tui: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
