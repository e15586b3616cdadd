"""Metric browser redraw time: a run logging 200 fields over 10,000 steps, in a real console.

    python bench/metric_browser.py [--fields 200] [--steps 10000] [--repeat 30] [--size 120x40]

The log is engine-shaped: each train line holds the 8 train columns and the other fields
(`layer<i>/grad_norm`, ...) beside them, a probe every 250 steps holds 4 more. It is read
with the console's own reader (`load_log`), then the console opens on it (`b`, metrics mode)
and each figure times one redraw as the screen does it when the store moved: the field index
checked, the visible charts' specs built (the default EMA included) and each visible chart
replotted and rendered (plotext's figure and its text). Three figures: the grid (one page of
small charts), the grid filtered by a regex, and one chart full size. Prints one JSON line per
figure (wall and CPU ms, median and p95, with the load average: a shared machine's other
work shows up in wall time), then the read's time and the memory the store holds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

from bench.chart_redraw import Still  # noqa: E402
from fontaine_tui.core.log.read import load_log  # noqa: E402
from fontaine_tui.core.log.records import TRAIN_FIELDS  # noqa: E402

PROBE_EVERY = 250
PROBE_FIELDS = ("eval_chunk_mae", "train_chunk_mae", "eval_ar_ce", "eval_flow_loss")


def write_log(path: Path, fields: int, steps: int) -> int:
    """An engine-shaped log with `fields` numeric fields in all; returns the extra keys."""
    extra = fields - len(TRAIN_FIELDS) - len(PROBE_FIELDS)
    names = [f"layer{i}/grad_norm" for i in range(extra)]
    with path.open("w") as fh:
        for s in range(1, steps + 1):
            loss = 2.0 * math.exp(-s / 3000) + 0.3 + 0.05 * math.sin(s / 7)
            rec: dict[str, object] = {
                "kind": "train",
                "step": s,
                "time": 1_787_000_000.0 + s * 0.5,
                **dict(
                    zip(
                        TRAIN_FIELDS,
                        (loss, loss * 0.8, loss * 0.2, 3e-4, 1.0, 0.5, 0.01, s),
                        strict=True,
                    )
                ),
            }
            for i, name in enumerate(names):
                rec[name] = math.sin(s / (50 + i)) + i * 0.01
            fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
            if s % PROBE_EVERY == 0:
                probe = {"kind": "eval", "step": s, "time": 1_787_000_000.0 + s * 0.5}
                probe.update(
                    {k: 3.0 + 0.1 * math.sin(s / 900) + j for j, k in enumerate(PROBE_FIELDS)}
                )
                fh.write(json.dumps(probe, separators=(",", ":")) + "\n")
    return extra


def _p95(xs: list[float]) -> float:
    return round(sorted(xs)[int(0.95 * (len(xs) - 1))], 2)


async def measure(log: Path, repeat: int, size: tuple[int, int]) -> list[dict]:
    from fontaine_tui.console import make_app
    from fontaine_tui.core.preset.find import load_preset
    from fontaine_tui.model.metrics import MetricIndex
    from fontaine_tui.screens.metrics import MetricsScreen
    from fontaine_tui.widgets.chart import Chart
    from fontaine_tui.widgets.metric_grid import MetricCell

    t0, c0 = time.perf_counter(), time.process_time()
    store = load_log(log)
    load_s, load_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    app = make_app(source=Still(), preset=load_preset("demosonly_1gpu"), kind="attach")
    out = []
    async with app.run_test(size=size) as pilot:
        app.session.store = store
        app.view = view = app.session.view()
        await pilot.press("b")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MetricsScreen)
        t0 = time.perf_counter()
        names = len(
            MetricIndex(store, hidden=False).names()
        )  # a fresh index: every probe field, one pass
        index_ms = (time.perf_counter() - t0) * 1000

        def visible() -> list[Chart]:
            if screen.full:
                return [screen.query_one("#metrics-full", Chart)]
            return [c for c in screen.query(MetricCell) if c.display]

        async def figure(where: str, pattern: str, full: bool) -> dict:
            screen.pattern, screen.full, screen.selected = pattern, full, 0
            screen.draw(view)
            await pilot.pause()
            wall, cpu = [], []
            for _ in range(repeat + 2):
                store.version += 1  # new records: the index and every visible key moved
                t0, c0 = time.perf_counter(), time.process_time()
                screen.draw(view)
                charts = visible()
                for chart in charts:
                    chart.replot()
                    chart.render()
                wall.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.process_time() - c0) * 1000)
            wall, cpu = wall[2:], cpu[2:]  # the first two warm the caches
            return {
                "bench": "metric_browser",
                "where": where,
                "fields": names,
                "shown": len(screen.shown),
                "charts_drawn": len(charts),
                "steps": len(store.steps),
                "repeat": repeat,
                "median_ms": round(statistics.median(wall), 2),
                "p95_ms": _p95(wall),
                "cpu_median_ms": round(statistics.median(cpu), 2),
                "cpu_p95_ms": _p95(cpu),
                "load_1min": round(os.getloadavg()[0], 2),
            }

        out.append(await figure("grid, every field", "", False))
        out.append(await figure("grid filtered by /layer1[0-9]\\//", r"layer1[0-9]/", False))
        out.append(await figure("one chart full size", "", True))
        out.append(
            {
                "bench": "metric_browser",
                "where": "read the log, build the field index",
                "load_s": round(load_s, 2),
                "load_cpu_s": round(load_cpu_s, 2),
                "index_ms": round(index_ms, 1),
                "load_1min": round(os.getloadavg()[0], 2),
            }
        )
    return out


def store_mb(log: Path) -> float:
    """The memory the store holds once the log is read (tracemalloc, so slower than a read)."""
    import tracemalloc

    tracemalloc.start()
    store = load_log(log)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del store
    return round(held / 1e6, 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fields", type=int, default=200)
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--size", default="120x40")
    args = ap.parse_args(argv)
    w, h = (int(x) for x in args.size.split("x"))
    with tempfile.TemporaryDirectory(prefix="fontaine-bench-metrics-") as tmp:
        log = Path(tmp) / "train_log.jsonl"
        write_log(log, args.fields, args.steps)
        for row in asyncio.run(measure(log, args.repeat, (w, h))):
            print(json.dumps(row))
        print(json.dumps({"bench": "metric_browser", "store_mb": store_mb(log)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
