"""Cold read of a 1M-line log by several readers, side by side in one run.

The readers read the same records written three ways (bench/make_log.py: the engine's
compact form, Python's default json.dumps, keys in a random order per record):

  verdict     `fontaine-tui verdict`'s own path: load_log(columns=False, workers=default) +
              compute_verdict (fork workers on a big file)
  verdict-1p  the same read in one process, no fork workers
  orjson      a bare `for line in f: orjson.loads(line)` loop
  jq          jq -c 'select(.kind=="eval")' FILE > /dev/null
  verdict/1   the console's full read in one process (load_log(columns=True)): every field
  attach      LocalRun.follow() catch-up + ingest_lines per batch (what `attach` does at start)

    python bench/cold_read.py [--repeat 3] [--styles compact,default,shuffled] [--log PATH]

Targets: verdict no slower than the bare orjson loop on every style (time ratio <= 1.0),
at least 4x faster than jq. Best of --repeat rounds; rounds interleave every contestant on
every file so load on the machine hits them all.
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

from make_log import STYLES, ensure  # noqa: E402

from fontaine_tui.core.follow.local import LocalRun  # noqa: E402
from fontaine_tui.core.log.read import default_workers, ingest_lines, load_log  # noqa: E402
from fontaine_tui.core.log.store import RunStore  # noqa: E402
from fontaine_tui.core.preset.find import load_preset  # noqa: E402
from fontaine_tui.core.verdict.rules import compute_verdict  # noqa: E402


def verdict_path(path: Path, preset) -> str:
    store = load_log(path, columns=False, workers=default_workers())
    return compute_verdict(store, preset).verdict


def verdict_lean_single(path: Path, preset) -> str:
    return compute_verdict(load_log(path, columns=False, workers=1), preset).verdict


def verdict_full(path: Path, preset) -> str:
    return compute_verdict(load_log(path), preset).verdict


def attach_path(path: Path, preset) -> str:
    size = path.stat().st_size

    async def go() -> str:
        store = RunStore()
        src = LocalRun(path.parent)
        async for batch in src.follow(path.name):
            if batch.segment:
                store.begin_segment(batch.name)
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


def jq(path: Path, preset) -> str:
    with open(path, "rb") as f:
        subprocess.run(
            ["jq", "-c", 'select(.kind=="eval")'], stdin=f, stdout=subprocess.DEVNULL, check=True
        )
    return "ok"


def main() -> int:
    ap = argparse.ArgumentParser(description="cold read: verdict vs orjson loop vs jq")
    ap.add_argument("--log", type=Path, help="one log of your own instead of the three styles")
    ap.add_argument("--styles", default=",".join(STYLES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-jq", action="store_true")
    ap.add_argument("--no-full", action="store_true", help="skip verdict/1 and attach")
    args = ap.parse_args()
    if args.log:
        files = {args.log.name: args.log}
    else:
        files = {style: ensure(style=style) for style in args.styles.split(",")}
    preset = load_preset("demosonly_1gpu")
    contestants = {
        "verdict": verdict_path,
        "verdict-1p": verdict_lean_single,
        "orjson": bare_orjson,
    }
    if not args.no_jq and shutil.which("jq"):
        contestants["jq"] = jq
    if not args.no_full:
        contestants["verdict/1"] = verdict_full
        contestants["attach"] = attach_path  # last in each round: it starts threads
    times = {(f, c): [] for f in files for c in contestants}
    answers: dict[tuple[str, str], str] = {}
    for path in files.values():  # warm the page cache: we compare parsers, not disks
        with open(path, "rb") as fh:
            while fh.read(1 << 24):
                pass
    for _ in range(args.repeat):
        for fname, path in files.items():
            for cname, fn in contestants.items():
                t0 = time.perf_counter()
                answers[fname, cname] = fn(path, preset)
                times[fname, cname].append(time.perf_counter() - t0)
    print(
        f"cpus {len(os.sched_getaffinity(0))}, workers {default_workers()}, "
        f"load {os.getloadavg()[0]:.2f}, best of {args.repeat}"
    )
    for fname, path in files.items():
        size = path.stat().st_size
        best = {c: min(times[fname, c]) for c in contestants}
        print(f"{fname}: {path.name}, {size / 1e6:.1f} MB")
        for cname, t in best.items():
            print(
                f"  {cname:<10} {t:7.2f} s  (median {statistics.median(times[fname, cname]):6.2f})"
                f"  {size / t / 1e6:6.1f} MB/s  -> {answers[fname, cname]}"
            )
        base = best["orjson"]
        print(f"  time verdict / orjson     = {best['verdict'] / base:.2f}x  (target <= 1.0)")
        print(f"  time verdict-1p / orjson  = {best['verdict-1p'] / base:.2f}x  (one process)")
        if "jq" in best:
            print(
                f"  speed-up over jq          = {best['jq'] / best['verdict']:.2f}x  (target >= 4)"
            )
        if "attach" in best:
            print(f"  time attach / orjson      = {best['attach'] / base:.2f}x")
            print(f"  time verdict/1 / orjson   = {best['verdict/1'] / base:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
