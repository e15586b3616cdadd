"""What every writer logs: a train loss at each step and an eval probe every EVERY steps, to
STEPS, with a short sleep between steps, then a clean finish. Each begins its run, then waits
for the test's `go` (`ready`) before its first step."""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

STEPS = 12
EVERY = 4
SLEEP_S = 0.2
ANCHOR = EVERY  # the first probe
ENDPOINT = STEPS  # the last probe


def train_loss(step: int) -> float:
    return 2.0 * math.exp(-step / 5) + 0.1


def eval_loss(step: int) -> float:
    """Rises from the anchor: the delta at the endpoint is 0.02 * (ENDPOINT - ANCHOR)."""
    return 0.9 + 0.02 * step


def probe_steps() -> list[int]:
    return list(range(EVERY, STEPS + 1, EVERY))


def out_folder() -> Path:
    p = argparse.ArgumentParser()
    p.add_argument("out", type=Path)
    return p.parse_args().out


def ready(out: Path, limit_s: float = 120.0) -> None:
    """Wait, the library loaded and its run begun, until the test says its follower is up
    (the file `go` beside OUT): on a busy machine a writer may otherwise finish before the
    follower has even started."""
    go, deadline = out.parent / "go", time.monotonic() + limit_s
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def pause() -> None:
    time.sleep(SLEEP_S)
