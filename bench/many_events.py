"""A watcher's cost on a log that holds many events, against the same log without them.

    python bench/many_events.py [--steps 20000]

Writes two logs of `steps` train records: one with a `start` event after each record (a
hostile or broken trainer that restarts its loader every step), one without. Times
`fontaine-tui replay --plain` of each, side by side in one process: the plain report judges
the console's warning rules at every record, so a rule that walks all events at each look
makes the first cost steps x events. The target is linear: the ratio stays near the ratio of
the lines (2x).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fontaine_tui.cli import main  # noqa: E402


def write(path: Path, steps: int, events: bool) -> None:
    rows: list[dict[str, object]] = [{"kind": "meta", "step": 0, "time": 0, "schema": 1}]
    for s in range(1, steps + 1):
        rows.append(
            {"kind": "train", "step": s, "time": s * 0.1, "loss": 1.0, "step_s": 0.1,
             "data_s": 0.01}
        )  # fmt: skip
        if events:
            rows.append({"kind": "event", "step": s, "time": s * 0.1, "event": "start"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def replay(path: Path) -> float:
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["replay", "--plain", str(path), "-p", "demosonly_1gpu"])
    return time.perf_counter() - start


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        plain, busy = Path(tmp) / "plain.jsonl", Path(tmp) / "events.jsonl"
        write(plain, args.steps, events=False)
        write(busy, args.steps, events=True)
        a, b = replay(plain), replay(busy)
    print(f"replay --plain, {args.steps} train records: {a:.2f} s without events")
    print(f"the same with a start event after each: {b:.2f} s ({b / a:.2f}x; lines 2x)")


if __name__ == "__main__":
    main_()
