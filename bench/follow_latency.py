"""Append -> parsed record latency of the follower, locally and over SSH on loopback.

    python bench/follow_latency.py [--lines 300] [--no-ssh]

A writer thread appends one schema-v1 line at a time (5-15 ms apart, the time of each write
noted just before it); the consumer follows the file through a RunSource, parses each batch
with RunStore.add_line and notes when each record comes out. Reported: p50/p95/max over
--lines records for: local with inotify (the default), local polling only (the fallback
for filesystems without inotify), and SSH through a real sshd on 127.0.0.1 (the test
helper from tests/follow/sshd_helper.py; skipped if sshd is missing).
Targets (DESIGN.md): p95 <= 50 ms local, <= 250 ms over SSH.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fontaine_tui.core.follow import LocalRun  # noqa: E402
from fontaine_tui.core.records import TrainPoint  # noqa: E402
from fontaine_tui.core.store import RunStore  # noqa: E402

LOG = "train_log.jsonl"


def line(step: int) -> bytes:
    return json.dumps({"kind": "train", "step": step, "time": time.time(), "loss": 1.5,
                       "ar_ce": 1.2, "flow_loss": 0.3, "lr": 3e-4, "grad_norm": 1.1,
                       "step_s": 0.5, "data_s": 0.01, "samples": step * 96}).encode() + b"\n"


async def measure(source, folder: Path, n: int, warmup: int = 5) -> list[float]:
    sent: dict[int, float] = {}
    got: dict[int, float] = {}
    store = RunStore()
    log = folder / LOG
    log.write_bytes(b"")
    ready = threading.Event()

    def writer() -> None:
        ready.wait(30)
        rng = random.Random(1)
        fd = os.open(log, os.O_WRONLY | os.O_APPEND)
        try:
            for step in range(1, n + warmup + 1):
                time.sleep(0.005 + rng.random() * 0.01)
                data = line(step)
                sent[step] = time.perf_counter()
                os.write(fd, data)
        finally:
            os.close(fd)

    async def consume() -> None:
        async for batch in source.follow():
            if batch.reset:
                raise RuntimeError("unexpected reset")
            if not batch.lines and "waiting" not in batch.note:
                ready.set()
            for i, raw in enumerate(batch.lines):
                rec = store.add_line(raw, batch.first_line + i)
                if isinstance(rec, TrainPoint):
                    got[rec.step] = time.perf_counter()
            if len(got) >= n + warmup:
                return

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    task = asyncio.create_task(consume())
    await asyncio.sleep(0.5 if isinstance(source, LocalRun) else 3.0)  # connected by then
    ready.set()
    await asyncio.wait_for(task, 120)
    thread.join()
    await source.close()
    return [(got[s] - sent[s]) * 1000 for s in range(warmup + 1, n + warmup + 1)]


def report(name: str, ms: list[float], target: float) -> None:
    q = statistics.quantiles(ms, n=100)
    p95 = q[94]
    print(f"  {name:<22} n={len(ms):4d}  p50 {q[49]:6.2f} ms  p95 {p95:6.2f} ms  "
          f"max {max(ms):7.2f} ms  target p95 <= {target:g} ms: "
          f"{'met' if p95 <= target else 'MISSED'}")


async def main_async(args) -> int:
    print(f"follow latency, {args.lines} appends each, load {os.getloadavg()[0]:.2f}, "
          f"cpus {len(os.sched_getaffinity(0))}")
    with tempfile.TemporaryDirectory(prefix="follow-bench-") as tmp:
        folder = Path(tmp)
        report("local (inotify)", await measure(LocalRun(folder), folder, args.lines), 50)
        report("local (polling only)",
               await measure(LocalRun(folder, inotify=False), folder, args.lines), 50)
        if not args.no_ssh:
            from tests.follow.sshd_helper import HOST_ALIAS, Sshd, find_sshd

            if find_sshd() is None:
                print("  ssh: skipped (no sshd; install openssh-server)")
                return 0
            from fontaine_tui.core.follow_ssh import SshRun
            from fontaine_tui.core.target import SshTarget

            sshd = Sshd(folder / "sshd").start()
            try:
                src = SshRun(SshTarget(HOST_ALIAS, str(folder)), ssh_options=sshd.ssh_options)
                report("ssh loopback (sshd)", await measure(src, folder, args.lines), 250)
            finally:
                sshd.stop()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description="append -> record latency")
    ap.add_argument("--lines", type=int, default=300)
    ap.add_argument("--no-ssh", action="store_true")
    return asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
