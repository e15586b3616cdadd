"""A dead notification endpoint does not slow the console: key round-trips side by side.

    python bench/notify_console.py [--keys 40] [--repeat 2]

The console runs headless (Textual's test driver) on a real run folder, babysitting it (as
`attach` and `launch` do: model/babysitter.py), while a writer appends train records and a
probe every 50 steps, so there is news to post all along. Three destinations, in turn and
repeated in that order: none; a socket that accepts and never answers (each POST waits out
its timeout, then retries); a refused port. Figures: the median and p95 of a key press's
round-trip (press, then the app idle again) and the dead/none ratio. Prints one JSON line per
run and a summary line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

from fontaine_tui.console import make_app  # noqa: E402
from fontaine_tui.core.follow.local import LocalRun  # noqa: E402
from fontaine_tui.core.preset.find import load_preset  # noqa: E402
from fontaine_tui.core.runfolder import RunFolder  # noqa: E402
from fontaine_tui.core.verdict.prereg import freeze  # noqa: E402
from tests.logs import dumps, meta, probe, train  # noqa: E402


def writer(log: Path, stop: threading.Event, t0: float) -> None:
    with open(log, "a") as fh:
        fh.write(dumps(meta(t=t0)) + "\n")
        step = 0
        while not stop.is_set():
            step += 1
            now = time.time()
            fh.write(dumps(train(step, now)) + "\n")
            if step % 50 == 0:
                fh.write(dumps(probe(step, now, 3.4 + step / 1e4, 3.6)) + "\n")
            fh.flush()
            time.sleep(0.05)


async def one(kind: str, url: str | None, keys: int, base: Path) -> dict:
    preset = load_preset("demosonly_1gpu")
    folder = Path(tempfile.mkdtemp(dir=base, prefix=f"{kind}-"))
    t0 = time.time()
    freeze(RunFolder(folder), preset, ["launch"], "bench", now=t0 - 1)
    if url:
        os.environ["FONTAINE_NOTIFY"] = url
    else:
        os.environ.pop("FONTAINE_NOTIFY", None)
    stop = threading.Event()
    th = threading.Thread(target=writer, args=(folder / "train_log.jsonl", stop, t0))
    th.start()
    app = make_app(source=LocalRun(folder), preset=preset, kind="attach", babysit_host="bench")
    times = []
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await asyncio.sleep(2.0)  # the first poll and a probe or two are queued
            for i in range(keys):
                t = time.perf_counter()
                await pilot.press("pm"[i % 2])
                await pilot.pause()
                times.append(time.perf_counter() - t)
            sitter = app.babysitter
            stats = sitter.notices.notifier.stats() if sitter and sitter.notices else {}
    finally:
        stop.set()
        th.join()
    q = sorted(times)
    return {
        "destination": kind,
        "keys": keys,
        "median_ms": 1e3 * statistics.median(q),
        "p95_ms": 1e3 * q[int(0.95 * (len(q) - 1))],
        "queued": sum(s.queued for s in stats.values()),
        "delivered": sum(s.delivered for s in stats.values()),
        "failed": sum(s.failed for s in stats.values()),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp()  # the user's config.toml stays out
    base = Path(tempfile.mkdtemp(prefix="fontaine-bench-notify-"))
    os.environ["FONTAINE_REGISTRY"] = str(base / "state" / "babysit.toml")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(512)
    refused = socket.socket()
    refused.bind(("127.0.0.1", 0))
    refused_port = refused.getsockname()[1]
    refused.close()
    configs = [
        ("none", None),
        ("silent", f"http://127.0.0.1:{silent.getsockname()[1]}/h"),
        ("refused", f"http://127.0.0.1:{refused_port}/h"),
    ]
    rows: dict[str, list[dict]] = {}
    for _ in range(args.repeat):
        for kind, url in configs:
            row = asyncio.run(one(kind, url, args.keys, base))
            rows.setdefault(kind, []).append(row)
            print(json.dumps(row), flush=True)
    silent.close()

    def med(kind: str) -> float:
        return statistics.median(r["median_ms"] for r in rows[kind])

    def p95(kind: str) -> float:
        return statistics.median(r["p95_ms"] for r in rows[kind])

    print(
        json.dumps(
            {
                "summary": True,
                "silent_vs_none_median": med("silent") / med("none"),
                "silent_vs_none_p95": p95("silent") / p95("none"),
                "refused_vs_none_median": med("refused") / med("none"),
                "none_median_ms": med("none"),
                "silent_median_ms": med("silent"),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
