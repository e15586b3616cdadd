"""Chart redraw time with 10,000 points per curve: replot (downsample + plotext) + render.

    python bench/chart_redraw.py [--points 10000] [--repeat 50] [--size 120x40]

Three figures: the loss chart as laid out in the monitor of a 120x40 console (the redraw the
app does: the monitor's default EMA curves over the raw ones, drawn faint), the same chart
filling the whole terminal (the worst case), and the probes chart with 5 banked comparators
of 1,000 probes each (their curves and envelope, this run on top). Each redraw builds the
spec, as the screens do. Target: <= 30 ms per redraw (docs/performance.md). Prints one JSON
line per figure (wall and CPU time, with the load average, since a shared machine's other
work shows up in wall time); exit 1 if the in-console median misses.
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

from fontaine_tui.core.charts.loss import EMA_DEFAULT, loss_chart  # noqa: E402
from fontaine_tui.core.log.records import TrainPoint  # noqa: E402
from fontaine_tui.core.log.store import RunStore  # noqa: E402
from fontaine_tui.widgets.chart import Chart  # noqa: E402


def store_with(points: int) -> RunStore:
    store = RunStore()
    for s in range(1, points + 1):
        loss = 2.0 * math.exp(-s / (points / 3)) + 0.3 + 0.05 * math.sin(s / 7)
        store.add(
            TrainPoint(s, float(s), loss, loss * 0.8, loss * 0.2, 3e-4, 1.0, 0.5, 0.01, s * 96.0)
        )
    return store


class Still:
    """A source with nothing more to say: the benches fill the store directly."""

    label = "bench"

    async def follow(self, name="train_log.jsonl"):
        await asyncio.Event().wait()
        yield  # pragma: no cover

    async def read_bytes(self, name):
        return None  # no file beside the run: no telemetry history

    async def close(self):
        return None


class Bench(App):
    def compose(self) -> ComposeResult:
        yield Chart(id="chart")


def _time(chart: Chart, build, repeat: int) -> tuple[list[float], list[float]]:
    """(wall ms, CPU ms) per redraw, the spec built each time by `build()` as the screen does.

    On a shared machine the wall time also counts other processes' turns on the core. The
    CPU time is this redraw's own work.
    """
    chart.show(build())
    chart.render()  # warm-up: theme registration, first figure
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        spec = build()
        chart.show(spec, force=True)  # downsample to the width + rebuild the plotext figure
        chart.render()  # plotext build + ANSI -> Text: what a repaint costs
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return sorted(wall), sorted(cpu)


def _p95(xs: list[float]) -> float:
    return round(xs[int(0.95 * (len(xs) - 1))], 2)


def _figures(
    where: str, chart: Chart, spec, times: tuple[list[float], list[float]], points: int
) -> dict:
    wall, cpu = times
    return {
        "bench": "chart_redraw",
        "where": where,
        "points_per_curve": points,
        "curves": len(spec.curves),
        "chart_size": f"{chart.size.width}x{chart.size.height}",
        "repeat": len(wall),
        "median_ms": round(statistics.median(wall), 2),
        "p95_ms": _p95(wall),
        "max_ms": round(wall[-1], 2),
        "cpu_median_ms": round(statistics.median(cpu), 2),
        "cpu_p95_ms": _p95(cpu),
        "load_1min": round(os.getloadavg()[0], 2),
        "target_ms": 30,
    }


async def in_console(points: int, repeat: int, size: tuple[int, int]) -> dict:
    from fontaine_tui.console import make_app
    from fontaine_tui.core.preset.find import load_preset

    store = store_with(points)

    app = make_app(source=Still(), preset=load_preset("demosonly_1gpu"), kind="attach")
    async with app.run_test(size=size) as pilot:
        app.session.store = store
        app.view = app.session.view()
        await pilot.pause()
        chart = app.screen.query_one("#loss-chart", Chart)

        def build():  # the monitor's default: EMA curves over the raw ones, drawn faint
            return loss_chart(store, EMA_DEFAULT)

        return _figures(
            "monitor loss chart in a 120x40 console",
            chart,
            build(),
            _time(chart, build, repeat),
            points,
        )


async def full_screen(points: int, repeat: int, size: tuple[int, int]) -> dict:
    store = store_with(points)

    def build():
        return loss_chart(store, EMA_DEFAULT)

    app = Bench()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        chart = app.query_one(Chart)
        return _figures(
            "chart filling the terminal", chart, build(), _time(chart, build, repeat), points
        )


async def banked_probes(
    repeat: int, size: tuple[int, int], runs: int = 5, probes: int = 1000
) -> dict:
    """The probes screen's chart with `runs` banked comparators of `probes` probes each."""
    import tempfile

    from fontaine_tui.console import make_app
    from fontaine_tui.core.bank import store as bank
    from fontaine_tui.core.charts.probes import probes_chart
    from fontaine_tui.core.log.records import Event, Meta, Probe
    from fontaine_tui.core.preset.find import load_preset

    def run_store(k: float) -> RunStore:
        st = RunStore()
        st.add(Meta(0, 0.0, 1, f"run{k}", 1, "cpu", {}, (), "bench"), 1)
        for s in range(1, probes + 101):
            v = 3.0 + k * s / probes + 0.02 * math.sin(s / 5)
            st.add(
                Probe(
                    s,
                    float(s),
                    v,
                    v,
                    0.6,
                    0.07,
                    {},
                    256,
                    s + 1,
                    fields={"eval_chunk_mae": v, "train_chunk_mae": v},
                ),
                s + 1,
            )
        st.add(Event(probes + 100, 0.0, "end", ""), probes + 102)
        return st

    tmp = Path(tempfile.mkdtemp(prefix="fontaine-bench-bank-"))
    os.environ["FONTAINE_BANK"] = str(tmp / "bank")
    text = (Path(__file__).resolve().parents[1] / "presets" / "demosonly_1gpu.toml").read_text()
    text = text[: text.index("[[amendments]]")] + text[text.index("[gates]") :]
    for key, value in (
        ("steps", probes + 100),
        ("eval_every", 1),
        ("save_every", probes + 100),
        ("anchor_step", 100),
        ("endpoint_step", probes + 100),
    ):
        text = "\n".join(
            f"{key} = {value}" if line.startswith(f"{key} = ") else line
            for line in text.split("\n")
        )
    for i in range(runs):
        bank.put(f"run{i}", bank.document(run_store(0.5 + i * 0.3), f"bench run {i}"))
        text = text.replace(
            "[gates]", f'[comparators.run{i}]\nbank = "run{i}"\ngroup = "drifting"\n\n[gates]'
        )
    (tmp / "banked.toml").write_text(text)
    preset = load_preset(tmp / "banked.toml")
    store = run_store(0.2)

    app = make_app(source=Still(), preset=preset, kind="attach")
    async with app.run_test(size=size) as pilot:
        app.session.store = store
        app.view = app.session.view()
        await pilot.press("p")
        await pilot.pause()
        chart = app.screen.query_one("#probes-chart", Chart)
        view = app.view

        def build():
            return probes_chart(view.seen, preset, view.latest, False)

        spec = build()
        wall, cpu = _time(chart, build, repeat)
        out = _figures(
            f"probes chart, {runs} banked comparators x {probes} probes + envelope",
            chart,
            spec,
            (wall, cpu),
            probes,
        )
        out["bands"] = len(spec.bands)
        return out


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
    probes = asyncio.run(banked_probes(args.repeat, (w, h)))
    print(json.dumps(probes))
    return 0 if max(console["median_ms"], probes["median_ms"]) <= console["target_ms"] else 1


if __name__ == "__main__":
    sys.exit(main())
