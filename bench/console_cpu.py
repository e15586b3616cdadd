"""CPU used by the console while it follows a run: idle, then with 100 lines/s arriving.

    python bench/console_cpu.py [--seconds 30] [--rate 100] [--mode monitor] [--telemetry]

The console runs headless (Textual's test driver: every frame is composed, nothing is
written to a terminal) in this process and follows a real run folder through the local
follower; a separate writer process appends train records, so its CPU is not counted.
Figures are this process's user+system CPU time over the window, as % of one core.
Targets (docs/performance.md): idle <= 1 %, 100 lines/s <= 5 %. Prints one JSON line per phase.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

import psutil  # noqa: E402

from tests.logs import dumps, meta, train  # noqa: E402

WRITER = r"""
import json, math, sys, time
path, rate, start, seconds = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
step, t_end = start, time.monotonic() + seconds
tick = 0.1
per_tick = max(1, round(rate * tick))
with open(path, "a") as fh:
    nxt = time.monotonic()
    while time.monotonic() < t_end:
        for _ in range(per_tick):
            step += 1
            loss = 2.0 * math.exp(-step / 400) + 0.3
            fh.write(json.dumps({"kind": "train", "step": step, "time": time.time(),
                                 "loss": loss, "ar_ce": loss * 0.8, "flow_loss": loss * 0.2,
                                 "lr": 3e-4, "grad_norm": 1.0, "step_s": 1 / rate,
                                 "data_s": 0.0005, "samples": step * 96}) + "\n")
        fh.flush()
        nxt += tick
        time.sleep(max(0.0, nxt - time.monotonic()))
print(step)
"""


def run_folder(start_steps: int, prefix: str) -> Path:
    """A new run folder whose log holds `start_steps` train records, one a second, to now."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    t0 = time.time() - start_steps
    (folder / "train_log.jsonl").write_text(
        "".join(
            dumps(r) + "\n"
            for r in [meta(t=t0), *(train(s, t0 + s) for s in range(1, start_steps + 1))]
        )
    )
    (folder / "engine.out.log").write_text("engine: started\n")
    return folder


def cpu_seconds(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


async def window(seconds: float) -> tuple[float, float]:
    proc = psutil.Process()
    c0, w0 = cpu_seconds(proc), time.monotonic()
    await asyncio.sleep(seconds)
    return cpu_seconds(proc) - c0, time.monotonic() - w0


async def run(
    seconds: float, rate: float, mode: str, start_steps: int, telemetry: bool = False
) -> list[dict]:
    from fontaine_tui.console import make_app
    from fontaine_tui.core.follow.local import LocalRun
    from fontaine_tui.core.preset.find import load_preset
    from fontaine_tui.model.sampler import default_telemetry

    folder = run_folder(start_steps, "fontaine-cpu-")
    log = folder / "train_log.jsonl"
    source = LocalRun(folder)
    app = make_app(
        source=source,
        preset=load_preset("demosonly_1gpu"),
        kind="attach",
        start_mode=mode,
        telemetry=default_telemetry(source) if telemetry else None,
    )
    out = []
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 30
        while app.session.store.last_step < start_steps and time.monotonic() < deadline:
            await pilot.pause(0.05)
        await asyncio.sleep(2.0)  # let the first frames settle
        cpu, wall = await window(seconds)
        out.append(
            {
                "bench": "console_cpu",
                "phase": "idle",
                "mode": mode,
                "telemetry": telemetry,
                "seconds": round(wall, 1),
                "cpu_s": round(cpu, 3),
                "pct_of_core": round(100 * cpu / wall, 2),
                "target_pct": 1.0,
                "frames": app.frames,
            }
        )
        frames0, step0 = app.frames, app.session.store.last_step
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(log), str(rate), str(start_steps), str(seconds + 1)],
            stdout=subprocess.PIPE,
        )
        try:
            cpu, wall = await window(seconds)
        finally:
            writer.wait(timeout=seconds + 30)
        await pilot.pause(0.5)
        lines = app.session.store.last_step - step0
        out.append(
            {
                "bench": "console_cpu",
                "phase": f"{rate:g} lines/s",
                "mode": mode,
                "telemetry": telemetry,
                "seconds": round(wall, 1),
                "cpu_s": round(cpu, 3),
                "pct_of_core": round(100 * cpu / wall, 2),
                "target_pct": 5.0,
                "lines_followed": lines,
                "frames": app.frames - frames0,
            }
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=100.0)
    ap.add_argument("--mode", default="monitor", choices=("monitor", "probes", "verdict", "runs"))
    ap.add_argument("--start-steps", type=int, default=500)
    ap.add_argument(
        "--telemetry",
        action="store_true",
        help="sample this host every 5 s as `attach` does (psutil, NVML if present)",
    )
    args = ap.parse_args()
    results = asyncio.run(run(args.seconds, args.rate, args.mode, args.start_steps, args.telemetry))
    for r in results:
        print(json.dumps(r))
    return 0 if all(r["pct_of_core"] <= r["target_pct"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
