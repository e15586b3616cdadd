"""Key to frame in the console, on a live run at 5,000 lines/s, beside an empty app's.

Every mode switch is timed, the metric browser's opening among them, and the same for an
empty Textual app (the floor).

    python bench/responsiveness.py [--rounds 20] [--rate 5000]

The console runs headless (Textual's test driver composes every frame; nothing is written to
a terminal) in this process and follows a real run folder through the local follower while a
separate writer process appends train records at `--rate` lines/s. The keys start once the
console has composed every mode, which it does in the background after it starts
(`modes_composed_after_s`: from the app's start until the run has caught up and every mode
is composed). Each round presses the mode keys in turn (p probes, v verdict, r runs, b metric browser, t processes, m monitor);
one key's time runs from the key event, posted as the terminal's driver posts it, to the
first frame of the switched-to screen the app hands its driver. The floor is an app with six empty
screens switched by the same keys. Target (docs/performance.md): p95 <= 100 ms on an idle
machine. Prints one JSON line per key, each with its p50 and p95 as multiples of the
floor's (`p50_vs_floor`, `p95_vs_floor`), then one for the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

from bench.console_cpu import WRITER, run_folder  # noqa: E402

KEYS = ("p", "v", "r", "b", "t", "m")


def summary(name: str, times: list[float], **more: object) -> dict:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "bench": "responsiveness",
        "what": name,
        "n": len(times),
        "p50_ms": round(1000 * statistics.median(times), 1),
        "p95_ms": round(1000 * p95, 1),
        "max_ms": round(1000 * ordered[-1], 1),
        "target_p95_ms": 100,
        **more,
    }


def watch_frames(app) -> list[tuple[float, object]]:
    """(time, screen) of every frame the app hands its driver from now on."""
    frames: list[tuple[float, object]] = []
    display = app._display

    def seen(screen, update) -> None:
        frames.append((time.perf_counter(), screen))
        display(screen, update)

    app._display = seen
    return frames


async def timed(app, frames: list[tuple[float, object]], key: str, cls: type) -> float:
    """From the key, as the terminal's driver posts it, to the first frame of `cls`'s screen."""
    from textual import events

    t0 = time.perf_counter()
    app.post_message(events.Key(key, key))
    deadline = t0 + 30
    while time.perf_counter() < deadline:
        drawn = [t for t, screen in frames if t >= t0 and isinstance(screen, cls)]
        if drawn:
            return drawn[0] - t0
        await asyncio.sleep(0.001)
    raise RuntimeError(f"no frame of {cls.__name__} within 30 s of {key!r}")


async def console(rounds: int, rate: float, start_steps: int = 2000) -> list[dict]:
    from fontaine_tui.console import make_app
    from fontaine_tui.core.follow.local import LocalRun
    from fontaine_tui.core.preset.find import load_preset
    from fontaine_tui.screens.modes import MODES

    folder = run_folder(start_steps, "fontaine-keys-")
    log = folder / "train_log.jsonl"
    app = make_app(source=LocalRun(folder), preset=load_preset("demosonly_1gpu"), kind="attach")
    by_key = {
        "p": MODES["probes"],
        "v": MODES["verdict"],
        "r": MODES["runs"],
        "b": MODES["metrics"],
        "t": MODES["processes"],
        "m": MODES["monitor"],
    }
    times: dict[str, list[float]] = {k: [] for k in KEYS}
    started = time.monotonic()
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 60
        while app.session.store.last_step < start_steps and time.monotonic() < deadline:
            await pilot.pause(0.05)
        while not app.modes_warm and time.monotonic() < deadline:  # composed ahead of keys
            await pilot.pause(0.05)
        warm_s = time.monotonic() - started
        seconds = rounds * 3.0 + 30
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(log), str(rate), str(start_steps), str(seconds)],
            stdout=subprocess.PIPE,
        )
        try:
            await asyncio.sleep(1.0)  # the follower at the writer's pace
            step0, w0 = app.session.store.last_step, time.monotonic()
            frames = watch_frames(app)
            for _ in range(rounds):
                for key in KEYS:
                    times[key].append(await timed(app, frames, key, by_key[key]))
                    await asyncio.sleep(0.15)  # frames of the live run between keys
            followed = (app.session.store.last_step - step0) / (time.monotonic() - w0)
        finally:
            writer.kill()
            writer.wait()
    return [
        summary(f"key {k} ({by_key[k].__name__})", v, lines_per_s=round(followed))
        for k, v in times.items()
    ] + [
        summary(
            "every console key",
            [t for v in times.values() for t in v],
            modes_composed_after_s=round(warm_s, 2),
        )
    ]


async def floor(rounds: int) -> dict:
    from textual.app import App
    from textual.screen import Screen
    from textual.widgets import Footer, Static

    class Empty(Screen):
        def compose(self):
            yield Static(type(self).__name__)
            yield Footer()

    screens = {k: type(f"Empty_{k}", (Empty,), {}) for k in KEYS}

    class Floor(App):
        MODES = {k: s for k, s in screens.items()}
        BINDINGS = [(k, f"switch_mode('{k}')", k) for k in KEYS]

        def on_mount(self) -> None:
            self.switch_mode("m")

    app = Floor()
    times: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        frames = watch_frames(app)
        for _ in range(rounds):
            for key in KEYS:
                times.append(await timed(app, frames, key, screens[key]))
                await asyncio.sleep(0.15)
    return summary("empty Textual app (floor)", times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--rate", type=float, default=5000.0)
    args = ap.parse_args()
    rows = asyncio.run(console(args.rounds, args.rate))
    base = asyncio.run(floor(args.rounds))
    for row in rows:  # each beside the floor measured in the same run (a noisy machine)
        row["p50_vs_floor"] = round(row["p50_ms"] / max(base["p50_ms"], 0.1), 1)
        row["p95_vs_floor"] = round(row["p95_ms"] / max(base["p95_ms"], 0.1), 1)
        print(json.dumps(row), flush=True)
    print(json.dumps(base), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
