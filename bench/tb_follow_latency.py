"""Append -> record latency while torch's SummaryWriter writes an event file.

A writer subprocess logs train/loss (and eval/chunk_mae every 10th step) at `--rate`
steps/s, flushing after every step. The follower (ForeignRun: LocalRun.follow_files + the
TensorBoard decoder) timestamps each record as it comes out. Latency = that time - the
scalar's wall_time (both this machine's clock), for train records (the loss chart) and for
probes. Probes go out with the next step's first value (or after a second of quiet), so one
step later.

    python bench/tb_follow_latency.py [--steps 300] [--rate 20]

Target: p95 <= 100 ms (docs/performance.md). Prints one JSON line; exit 1 if the
p95 misses or a record is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fontaine_tui.core.follow.foreign import ForeignRun  # noqa: E402
from fontaine_tui.core.log.formats.source import SourceSpec  # noqa: E402
from fontaine_tui.core.log.records import Probe, TrainPoint  # noqa: E402

WRITER = """
import sys, time
from torch.utils.tensorboard import SummaryWriter
folder, steps, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
w = SummaryWriter(folder)
w.flush()
time.sleep(1.0)  # the follower is up
for step in range(1, steps + 1):
    w.add_scalar("train/loss", 1.0 / step, step)
    if step % 10 == 0:
        w.add_scalar("eval/chunk_mae", 3.0 + step / 1000, step, new_style=True)
    w.flush()
    time.sleep(1.0 / rate)
w.close()
"""


async def follow(folder: Path, steps: int, rate: float) -> dict:
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(steps), str(rate)])
    run = ForeignRun(folder, SourceSpec("tensorboard"))
    lat: list[float] = []
    plat: list[float] = []
    train = probes = 0
    deadline = time.time() + steps / rate + 60
    try:
        async for batch in run.follow():
            now = time.time()
            for rec in batch.records:
                if isinstance(rec, TrainPoint):
                    train += 1
                    lat.append((now - rec.time) * 1000)
                elif isinstance(rec, Probe):
                    probes += 1
                    plat.append((now - rec.time) * 1000)
            if (train >= steps and probes >= steps // 10) or time.time() > deadline:
                break
    finally:
        await run.close()
        writer.wait(timeout=60)
    lat.sort()
    plat.sort()
    return {
        "bench": "tb_follow_latency",
        "steps": steps,
        "rate": rate,
        "train_records": train,
        "probes": probes,
        "p50_ms": round(statistics.median(lat), 1),
        "p95_ms": round(lat[int(0.95 * (len(lat) - 1))], 1),
        "max_ms": round(lat[-1], 1),
        # a probe goes out with the next step (its step may get more keys) or after
        # one quiet poll (the last one)
        "probe_p50_ms": round(statistics.median(plat), 1),
        "probe_p95_ms": round(plat[int(0.95 * (len(plat) - 1))], 1),
        "target_p95_ms": 100,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--rate", type=float, default=20.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fontaine-tb-follow-") as tmp:
        out = asyncio.run(follow(Path(tmp), args.steps, args.rate))
    print(json.dumps(out))
    ok = out["train_records"] == args.steps and out["probes"] == args.steps // 10
    return 0 if ok and out["p95_ms"] <= 100 else 1


if __name__ == "__main__":
    sys.exit(main())
