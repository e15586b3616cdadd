"""Cold read of a 1M-line log, side by side in one run on the same file:

  verdict     `fontaine-tui verdict`'s own path: load_log(columns=False, workers=default) +
              compute_verdict (fork workers on a big file)
  verdict/1   the same read in one process (load_log(columns=True, workers=1)), what a
              console-less consumer of RunStore gets
  attach      LocalRun.follow() catch-up + ingest_lines per batch (what `attach` does at start)
  orjson      a bare `for line in f: orjson.loads(line)` loop
  verdict-1p  `verdict`'s read (columns=False) in one process, no fork workers
  jq          jq -c 'select(.kind=="eval")' FILE > /dev/null

    python bench/make_log.py            # once: bench/out/train_log_1000000.jsonl
    python bench/cold_read.py [--repeat 3] [--log PATH]

Targets (DESIGN.md): verdict no slower than the bare orjson loop, at least 4x faster than jq.
Best of --repeat rounds, rounds interleaved so load on the machine hits every contestant.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_log import ensure  # noqa: E402

from fontaine_tui.core.follow import LocalRun  # noqa: E402
from fontaine_tui.core.presets import load_preset  # noqa: E402
from fontaine_tui.core.store import RunStore, default_workers, ingest_lines, load_log  # noqa: E402
from fontaine_tui.core.verdict import compute_verdict  # noqa: E402


def verdict_path(path: Path, preset) -> str:
    store = load_log(path, columns=False, workers=default_workers())
    return compute_verdict(store, preset).verdict


def verdict_single(path: Path, preset) -> str:
    return compute_verdict(load_log(path), preset).verdict


def attach_path(path: Path, preset) -> str:
    size = path.stat().st_size

    async def go() -> str:
        store = RunStore()
        src = LocalRun(path.parent)
        async for batch in src.follow(path.name):
            if batch.reset:
                store = RunStore()
            ingest_lines(store, batch.lines, batch.first_line)
            if batch.end_offset >= size:
                break
        await src.close()
        # the verdict, not the store, leaves the loop: asyncio reprs a task's result in
        # places, and RunStore's dataclass repr prints every array (seconds for 1M rows)
        return compute_verdict(store, preset).verdict

    return asyncio.run(go())


def bare_orjson(path: Path, preset) -> str:
    n = 0
    loads = orjson.loads
    with open(path, "rb") as f:
        for line in f:
            loads(line)
            n += 1
    return f"{n} lines"


def verdict_lean_single(path: Path, preset) -> str:
    store = load_log(path, columns=False, workers=1)
    return compute_verdict(store, preset).verdict


def jq(path: Path, preset) -> str:
    with open(path, "rb") as f:
        subprocess.run(["jq", "-c", 'select(.kind=="eval")'], stdin=f,
                       stdout=subprocess.DEVNULL, check=True)
    return "ok"


def main() -> int:
    ap = argparse.ArgumentParser(description="cold read: verdict vs orjson loop vs jq")
    ap.add_argument("--log", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-jq", action="store_true")
    args = ap.parse_args()
    path = args.log or ensure()
    preset = load_preset("demosonly_1gpu")
    contestants = {"verdict": verdict_path, "verdict/1": verdict_single, "orjson": bare_orjson,
                   "verdict-1p": verdict_lean_single}
    if not args.no_jq and shutil.which("jq"):
        contestants["jq"] = jq
    contestants["attach"] = attach_path  # last in each round: it starts threads
    times: dict[str, list[float]] = {k: [] for k in contestants}
    answers: dict[str, str] = {}
    with open(path, "rb") as f:  # warm the page cache: we compare parsers, not disks
        while f.read(1 << 24):
            pass
    for _ in range(args.repeat):
        for name, fn in contestants.items():
            t0 = time.perf_counter()
            answers[name] = fn(path, preset)
            times[name].append(time.perf_counter() - t0)
    size = path.stat().st_size
    print(f"{path.name}: {size / 1e6:.1f} MB, cpus {len(os.sched_getaffinity(0))}, "
          f"workers {default_workers()}, load {os.getloadavg()[0]:.2f}, best of {args.repeat}")
    best = {k: min(v) for k, v in times.items()}
    for name, t in best.items():
        print(f"  {name:<10} {t:7.2f} s  (median {statistics.median(times[name]):6.2f})  "
              f"{size / t / 1e6:6.1f} MB/s  -> {answers[name]}")
    base = best["verdict"]
    print(f"ratio orjson/verdict   = {best['orjson'] / base:.2f}x  (target >= 1)")
    print(f"ratio orjson/verdict/1 = {best['orjson'] / best['verdict/1']:.2f}x")
    print(f"ratio orjson/attach    = {best['orjson'] / best['attach']:.2f}x")
    print(f"ratio orjson/verdict-1p = {best['orjson'] / best['verdict-1p']:.2f}x  (one process)")
    if "jq" in best:
        print(f"ratio jq/verdict       = {best['jq'] / base:.2f}x  (target >= 4)")
        print(f"ratio jq/attach        = {best['jq'] / best['attach']:.2f}x")
        print(f"ratio jq/verdict-1p    = {best['jq'] / best['verdict-1p']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
