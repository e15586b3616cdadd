"""Chart redraw time with 10,000 points per curve: replot (downsample + plotext) + render.

    python bench/chart_redraw.py [--points 10000] [--repeat 50] [--size 120x40]

Two figures: the loss chart as laid out in the monitor of a 120x40 console (the redraw the
app does), and the same chart filling the whole terminal (the worst case). Target: <= 30 ms
per redraw (the README's performance table). Prints one JSON line per figure (wall and CPU time, with the load
average, since a shared machine's other work shows up in wall time); exit 1 if the
in-console median misses.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

from textual.app import App, ComposeResult  # noqa: E402

from fontaine_tui.core.log.records import TrainPoint  # noqa: E402
from fontaine_tui.core.log.store import RunStore  # noqa: E402
from fontaine_tui.core.verdict.chart import loss_chart  # noqa: E402
from fontaine_tui.widgets.chart import Chart  # noqa: E402


def store_with(points: int) -> RunStore:
    store = RunStore()
    for s in range(1, points + 1):
        loss = 2.0 * math.exp(-s / (points / 3)) + 0.3 + 0.05 * math.sin(s / 7)
        store.add(TrainPoint(s, float(s), loss, loss * 0.8, loss * 0.2, 3e-4, 1.0, 0.5, 0.01,
                             s * 96.0))
    return store


class Bench(App):
    def compose(self) -> ComposeResult:
        yield Chart(id="chart")


def _time(chart: Chart, spec, repeat: int) -> tuple[list[float], list[float]]:
    """(wall ms, CPU ms) per redraw. On a shared machine the wall time also counts other
    processes' turns on the core; the CPU time is this redraw's own work."""
    chart.show(spec)
    chart.render()  # warm-up: theme registration, first figure
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        chart.show(spec, force=True)  # downsample to the width + rebuild the plotext figure
        chart.render()  # plotext build + ANSI -> Text: what a repaint costs
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return sorted(wall), sorted(cpu)


def _p95(xs: list[float]) -> float:
    return round(xs[int(0.95 * (len(xs) - 1))], 2)


def _figures(where: str, chart: Chart, spec, times: tuple[list[float], list[float]],
             points: int) -> dict:
    wall, cpu = times
    return {"bench": "chart_redraw", "where": where, "points_per_curve": points,
            "curves": len(spec.curves), "chart_size": f"{chart.size.width}x{chart.size.height}",
            "repeat": len(wall), "median_ms": round(statistics.median(wall), 2),
            "p95_ms": _p95(wall), "max_ms": round(wall[-1], 2),
            "cpu_median_ms": round(statistics.median(cpu), 2), "cpu_p95_ms": _p95(cpu),
            "load_1min": round(os.getloadavg()[0], 2), "target_ms": 30}


async def in_console(points: int, repeat: int, size: tuple[int, int]) -> dict:
    from fontaine_tui.console import make_app
    from fontaine_tui.core.verdict.presets import load_preset

    store = store_with(points)

    class Still:  # a source with nothing more to say: the store is filled directly
        label = "bench"

        async def follow(self, name="train_log.jsonl"):
            await asyncio.Event().wait()
            yield  # pragma: no cover

        async def close(self):
            return None

    app = make_app(source=Still(), preset=load_preset("demosonly_1gpu"), kind="attach")
    async with app.run_test(size=size) as pilot:
        app.session.store = store
        app.view = app.session.view()
        await pilot.pause()
        chart = app.screen.query_one("#loss-chart", Chart)
        spec = loss_chart(store)
        return _figures("monitor loss chart in a 120x40 console", chart, spec,
                        _time(chart, spec, repeat), points)


async def full_screen(points: int, repeat: int, size: tuple[int, int]) -> dict:
    spec = loss_chart(store_with(points))
    app = Bench()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        chart = app.query_one(Chart)
        return _figures("chart filling the terminal", chart, spec, _time(chart, spec, repeat),
                        points)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--size", default="120x40")
    args = ap.parse_args()
    w, h = (int(x) for x in args.size.split("x"))
    console = asyncio.run(in_console(args.points, args.repeat, (w, h)))
    print(json.dumps(console))
    print(json.dumps(asyncio.run(full_screen(args.points, args.repeat, (w, h)))))
    return 0 if console["median_ms"] <= console["target_ms"] else 1


if __name__ == "__main__":
    sys.exit(main())
