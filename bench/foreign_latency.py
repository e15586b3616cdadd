"""Flush -> probe latency of a foreign run followed live, per kind of source.

    python bench/foreign_latency.py [--runs 10] [--steps 7] [--spacing 0.3] [--kinds a,b]

For each kind (the table WRITERS in tests/core/follow/foreign_writers.py: MLflow's SQLite and
file stores, a Trainer's trainer_state.json, Lightning's CSV, tensorboardX's event files,
JSONL, W&B offline, trackio, LeRobot's printed lines, torch's SummaryWriter.add_scalars
sub-folders; a later kind plugs in there) one writer process with the real library writes
--runs runs of --steps steps, --spacing seconds apart, one run at a time, while a ForeignRun
follows it (the follow the console and `attach` use) into a RunStore. The latency of a probe
is the time from the writer's flush (noted just after the library's call returned) to the
probe in the store. Reported per kind: the endpoint probe's (the last step's, one per run)
p50 / p95 / max, every probe's p50 / p95, and runs whose endpoint probe never came (within
2.5 s of the writer's end). Also as JSON lines with --json.

Two libraries buffer what they are given, so their row from the call mostly measures the
library: wandb (0.31, offline) holds a step's row, logged as users log it
(`run.log(row, step=s)`), until the next step comes (the last until `finish()`), and writes
its run file each `x_transaction_log_flush_interval`, set here to 0.1 s
(`wandb.Settings(x_transaction_log_flush_interval=0.1)`; its default is 15 s); trackio (0.43,
local) sends its queued logs to its SQLite store every 0.5 s. For these a second row,
`<kind>/file`, measures from the moment the probe's row is in the file (the writer watches
the run file's bytes, or the store read-only, every 5 ms): that is the follow's own latency.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fontaine_tui.core.follow.foreign import MLFLOW_POLL_S  # noqa: E402
from fontaine_tui.core.follow.polled import CHECK_S  # noqa: E402
from tests.core.follow.foreign_writers import (  # noqa: E402
    WRITERS,
    Followed,
    close,
    follow,
    probe_steps,
    writer,
)

ORDER = (
    "mlflow_sqlite",
    "mlflow_file",
    "hf_trainer",
    "csv",
    "tensorboard",
    "jsonl",
    "wandb",
    "trackio",
    "lines",
    "tensorboard_scalars",
)


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))] if xs else math.nan


async def one_kind(kind: str, runs: int, steps: int, spacing: float, root: Path) -> list[dict]:
    """The kind's latency rows: one from the writer's flush, one more for a buffering library.

    The first row is timed from the writer's flush. A library that buffers its rows gets a
    second row, timed from the moment each row lands in the file (the writer notes when it
    does).
    """
    proc = writer(kind, steps, spacing)
    got = []
    t0 = time.monotonic()
    try:
        for i in range(runs):
            got.append(await follow(kind, root / f"{kind}-{i}", proc, steps, timeout=120))
    finally:
        code = close(proc)
    wall = round(time.monotonic() - t0, 1)
    rows = [row(kind, got, steps, "written")]
    if any(g.landed for g in got):
        rows.append(row(f"{kind}/file", got, steps, "landed"))
    for r in rows:
        r.update(runs=runs, spacing_s=spacing, writer_exit=code, wall_s=wall)
    return rows


def row(name: str, got: list[Followed], steps: int, since: str) -> dict:
    ends: list[float] = []
    every: list[float] = []
    missing = 0
    for one in got:
        for s in probe_steps(steps):
            late = one.latency(s, since) if s in getattr(one, since) else math.inf
            if math.isfinite(late):
                every.append(late)
            if s == steps:
                if math.isfinite(late):
                    ends.append(late)
                else:
                    missing += 1
    ms = [x * 1000 for x in ends]
    all_ms = [x * 1000 for x in every]
    return {
        "kind": name,
        "since": since,
        "steps": steps,
        "endpoint_p50_ms": round(statistics.median(ms), 1) if ms else None,
        "endpoint_p95_ms": round(pct(ms, 0.95), 1) if ms else None,
        "endpoint_max_ms": round(max(ms), 1) if ms else None,
        "probe_p50_ms": round(statistics.median(all_ms), 1) if all_ms else None,
        "probe_p95_ms": round(pct(all_ms, 0.95), 1) if all_ms else None,
        "endpoint_missing": missing,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--spacing", type=float, default=0.3)
    ap.add_argument(
        "--kinds",
        default=",".join(ORDER),
        help=f"comma-separated, of: {', '.join(sorted(WRITERS))}",
    )
    ap.add_argument("--json", action="store_true", help="one JSON object per kind")
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = [k for k in kinds if k not in WRITERS]
    if unknown:
        print(
            f"--kinds: unknown {', '.join(unknown)} (known: {', '.join(sorted(WRITERS))})",
            file=sys.stderr,
        )
        return 2
    print(
        f"# follow: whole reads checked each {CHECK_S} s, read at least each "
        f"{MLFLOW_POLL_S} s (MLflow); files polled at 0.25 s with inotify"
    )
    print(
        f"{'kind':<19} {'runs':>4} {'end p50':>8} {'end p95':>8} {'end max':>8} "
        f"{'all p50':>8} {'all p95':>8} {'missing':>7}  (ms)"
    )
    bad = 0
    with tempfile.TemporaryDirectory(prefix="fontaine-foreign-latency-") as tmp:
        for kind in kinds:
            rows = asyncio.run(one_kind(kind, args.runs, args.steps, args.spacing, Path(tmp)))
            bad += rows[0]["endpoint_missing"] + (rows[0]["writer_exit"] != 0)
            for row in rows:
                if args.json:
                    print(json.dumps(row), flush=True)
                    continue
                print(
                    f"{row['kind']:<19} {row['runs']:>4} {row['endpoint_p50_ms']!s:>8} "
                    f"{row['endpoint_p95_ms']!s:>8} {row['endpoint_max_ms']!s:>8} "
                    f"{row['probe_p50_ms']!s:>8} {row['probe_p95_ms']!s:>8} "
                    f"{row['endpoint_missing']:>7}",
                    flush=True,
                )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
