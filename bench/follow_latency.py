"""Append -> parsed record latency of the follower, locally and over SSH on loopback.

    python bench/follow_latency.py [--lines 300] [--no-ssh] [--cpu]

A writer thread appends one schema-v1 line at a time (5-15 ms apart, the time of each write
noted just before it); the consumer follows the file through a RunSource, parses each batch
with RunStore.add_line and notes when each record comes out. Reported: p50/p95/max over
--lines records for: local with inotify (the default), local polling only (the fallback
for filesystems without inotify), and SSH through a real sshd on 127.0.0.1 (the test
helper from tests/sshd_helper.py; skipped if sshd is missing).
Targets (docs/performance.md): p95 <= 50 ms local, <= 250 ms over SSH.
--cpu also reports the follower's own CPU (process time / wall time) following two files of
an idle run, and at 100 lines/s written by another process, next to a bare asyncio loop
waking 100 times a second on the same machine; and over SSH, the local follower's CPU next
to the remote follow script's (its shell and all it runs), idle and at 100 lines/s. SSH is
measured with both remote streams: python3's, and the shell loop used where python3 is absent.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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

from fontaine_tui.core.follow.local import LocalRun  # noqa: E402
from fontaine_tui.core.log.records import TrainPoint  # noqa: E402
from fontaine_tui.core.log.store import RunStore  # noqa: E402

LOG = "train_log.jsonl"


def line(step: int) -> bytes:
    return (
        json.dumps(
            {
                "kind": "train",
                "step": step,
                "time": time.time(),
                "loss": 1.5,
                "ar_ce": 1.2,
                "flow_loss": 0.3,
                "lr": 3e-4,
                "grad_norm": 1.1,
                "step_s": 0.5,
                "data_s": 0.01,
                "samples": step * 96,
            }
        ).encode()
        + b"\n"
    )


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
            if batch.segment:
                raise RuntimeError("unexpected new segment")
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


WRITER = r"""
import json, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
t0 = time.monotonic()
for i in range(1, int(sys.argv[2]) + 1):
    os.write(fd, json.dumps({"kind": "train", "step": i, "time": time.time(), "loss": 1.0},
                            separators=(",", ":")).encode() + b"\n")
    time.sleep(max(0.0, t0 + i * 0.01 - time.monotonic()))
"""


def start_writer(folder: Path, seconds: float):
    """Another process appending 100 lines/s to the log for `seconds`."""
    import subprocess

    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(folder / LOG), str(int(seconds * 100))]
    )


async def cpu(folder: Path, inotify: bool, rate: bool, seconds: float = 10.0) -> float:

    from fontaine_tui.core.log.read import ingest_lines

    (folder / LOG).write_bytes(b"")
    (folder / "engine.out.log").write_bytes(b"")
    src, store = LocalRun(folder, inotify=inotify), RunStore()

    async def drain(name: str) -> None:
        async for batch in src.follow(name):
            ingest_lines(store, batch.lines, batch.first_line)

    tasks = [asyncio.create_task(drain(n)) for n in (LOG, "engine.out.log")]
    writer = start_writer(folder, seconds + 2) if rate else None
    await asyncio.sleep(1.0)
    c0, w0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(seconds)
    share = (time.process_time() - c0) / (time.perf_counter() - w0) * 100
    if writer is not None:
        writer.wait()
    await src.close()
    await asyncio.gather(*tasks)
    return share


def script_cpu(folder: Path) -> float:
    """CPU seconds so far of the remote follow scripts for `folder`.

    It counts the shell, its subshells and every command they ran and reaped, as the sshd
    side's processes show them.
    """
    import psutil

    total, scripts = 0.0, []
    for p in psutil.process_iter(["name", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if (
            p.info["name"] in ("sh", "dash", "bash")
            and "@fontaine ok" in cmd
            and str(folder) in cmd
        ):
            scripts.append(p)
    pids = {p.pid for p in scripts}
    for script in (p for p in scripts if p.ppid() not in pids):
        try:
            family = [script, *script.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for p in family:  # live ones by their own time, the reaped in their parent's
            try:
                t = p.cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
            except psutil.NoSuchProcess:
                pass
    return total


async def ssh_cpu(src, folder: Path, rate: bool, seconds: float = 10.0) -> tuple[float, float]:
    """(% of a core for the local follower, % for the remote script) following the log."""

    (folder / LOG).write_bytes(b"")
    store = RunStore()

    async def drain() -> None:
        async for batch in src.follow(LOG):
            for i, raw in enumerate(batch.lines):
                store.add_line(raw, batch.first_line + i)

    task = asyncio.create_task(drain())
    writer = start_writer(folder, seconds + 4) if rate else None
    await asyncio.sleep(3.0)
    c0, r0, w0 = time.process_time(), script_cpu(folder), time.perf_counter()
    await asyncio.sleep(seconds)
    wall = time.perf_counter() - w0
    local, remote = (time.process_time() - c0) / wall * 100, (script_cpu(folder) - r0) / wall * 100
    if writer is not None:
        writer.wait()
    await src.close()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return local, remote


async def bare_loop(seconds: float = 5.0) -> float:
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(int(seconds * 100)):
        await asyncio.sleep(0.01)
    return (time.process_time() - c0) / (time.perf_counter() - w0) * 100


def report(name: str, ms: list[float], target: float) -> None:
    q = statistics.quantiles(ms, n=100)
    p95 = q[94]
    print(
        f"  {name:<22} n={len(ms):4d}  p50 {q[49]:6.2f} ms  p95 {p95:6.2f} ms  "
        f"max {max(ms):7.2f} ms  target p95 <= {target:g} ms: "
        f"{'met' if p95 <= target else 'MISSED'}"
    )


async def main_async(args) -> int:
    print(
        f"follow latency, {args.lines} appends each, load {os.getloadavg()[0]:.2f}, "
        f"cpus {len(os.sched_getaffinity(0))}"
    )
    with tempfile.TemporaryDirectory(prefix="follow-bench-") as tmp:
        folder = Path(tmp)
        report("local (inotify)", await measure(LocalRun(folder), folder, args.lines), 50)
        report(
            "local (polling only)",
            await measure(LocalRun(folder, inotify=False), folder, args.lines),
            50,
        )
        if not args.no_ssh:
            from tests.sshd_helper import HOST_ALIAS, Sshd, find_sshd

            if find_sshd() is None:
                print("  ssh: skipped (no sshd; install openssh-server)")
                return 0
            from fontaine_tui.core.follow.ssh import SshRun
            from fontaine_tui.core.ssh.destination import SshTarget

            sshd = Sshd(folder / "sshd").start()
            try:
                for py in (True, False):
                    src = SshRun(
                        SshTarget(HOST_ALIAS, str(folder)),
                        ssh_options=sshd.ssh_options,
                        remote_python=py,
                    )
                    report(
                        f"ssh loopback, {'python3' if py else 'shell'}",
                        await measure(src, folder, args.lines),
                        250,
                    )
                if args.cpu:
                    print(
                        "SSH follow CPU, % of one core: the local follower / the remote "
                        "script (its shell and every command it runs)"
                    )
                    for py in (True, False):
                        for rate in (False, True):
                            src = SshRun(
                                SshTarget(HOST_ALIAS, str(folder)),
                                ssh_options=sshd.ssh_options,
                                remote_python=py,
                            )
                            here, there = await ssh_cpu(src, folder, rate)
                            print(
                                f"  {'python3' if py else 'shell':<8} "
                                f"{'100 lines/s' if rate else 'idle':<12} local {here:5.2f} %"
                                f"  remote {there:5.2f} %"
                            )
            finally:
                sshd.stop()
        if args.cpu:
            print("follower CPU, % of one core (two files followed, lines parsed into a RunStore)")
            for inotify in (True, False):
                mode = "inotify" if inotify else "polling only"
                print(f"  idle, {mode:<13} {await cpu(folder, inotify, False):5.2f} %")
                print(f"  100 lines/s, {mode:<6} {await cpu(folder, inotify, True):5.2f} %")
            print(f"  bare asyncio loop waking 100/s: {await bare_loop():5.2f} %")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description="append -> record latency")
    ap.add_argument("--lines", type=int, default=300)
    ap.add_argument("--no-ssh", action="store_true")
    ap.add_argument("--cpu", action="store_true", help="also measure the follower's CPU share")
    return asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
