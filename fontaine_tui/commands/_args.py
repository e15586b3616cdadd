"""What several commands' parsers share: argument types, the help formatter, --ssh-config.

This module is not a command: the leading underscore keeps cli.py from registering it.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

SPEED_MIN, SPEED_MAX = 1e-3, 1e6  # slower than 1000x real time never visibly moves


def speed(text: str) -> float:
    """A replay speed: times the log's own pace, SPEED_MIN to SPEED_MAX."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not SPEED_MIN <= value <= SPEED_MAX:  # NaN fails both
        raise argparse.ArgumentTypeError(
            f"expected a speed from {SPEED_MIN:g} to {SPEED_MAX:g} (times the log's own pace), "
            f"got {text!r}"
        )
    return value


def add_blind(p: argparse.ArgumentParser) -> None:
    """--blind: hide the rule's read until the endpoint, as `[verdict] blind = true` does."""
    p.add_argument(
        "--blind",
        action="store_true",
        help="hide the rule's values, deltas and verdict until the final read (health "
        "warnings still show; u in the verdict screen unblinds, recorded in review.jsonl)",
    )


def positive(what: str) -> Callable[[str], float]:
    """An argument type for a positive finite number; `what` names it in the error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


seconds = positive("a positive number of seconds")  # a span of seconds


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """An argparse RawDescriptionHelpFormatter that still wraps a one-line paragraph.

    A description reads as prose, and an epilog's example lines keep their breaks.
    """

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(
            part if "\n" in part else argparse.HelpFormatter._fill_text(self, part, width, indent)
            for part in text.split("\n\n")
        )


def examples(*lines: str, exits: str = "") -> str:
    """An epilog: `examples:` with one command line each, then what the exit codes mean."""
    text = "examples:\n" + "\n".join(f"  {line}" for line in lines)
    return text + (f"\n\nexit codes: {exits}" if exits else "")


def ssh_config(
    p: argparse.ArgumentParser, help: str = "ssh client config file (ssh -F FILE)"
) -> None:
    """Add --ssh-config after the command, as well as the global option before it.

    The global option (`fontaine-tui --ssh-config FILE COMMAND`) is still taken. This one is
    absent unless given, so it never hides the global one.
    """
    p.add_argument(
        "--ssh-config",
        metavar="FILE",
        default=argparse.SUPPRESS,
        help=f"{help}; also before the command",
    )
