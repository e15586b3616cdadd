"""Argument types shared by several commands (not a command: the leading underscore keeps
cli.py from registering it)."""

from __future__ import annotations

import argparse
import math

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
            f"got {text!r}")
    return value


def seconds(text: str) -> float:
    """A span of seconds: a positive finite number."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value
