"""CPU used by the console overlaying 4 live runs, beside the console following one.

    python bench/overlay_cpu.py [--seconds 30] [--rate 10] [--runs 4]

Four run folders (frozen with demosonly_1gpu, 500 steps and two probes already logged) are
registered. A writer process appends train records to them at `--rate` lines/s per run, and
a probe every 100 steps, as a training run writes its log; its CPU is not counted.

The console runs headless (Textual's test driver: every frame is composed, nothing is
written to a terminal) in this process, at the app's own frame and chart intervals:
  1. following one run in the monitor mode while the writer appends to that run alone;
  2. the same console with all the runs pinned in the runs mode (space) and overlaid (o),
     while the writer appends to every run.
Figures are this process's user+system CPU time over each window, as % of one core, with
the load average before and after. Prints one JSON line per phase.
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


from bench.console_cpu import window  # noqa: E402
from tests.logs import RIGONLY_LIKE, dumps, records_upto  # noqa: E402

START = 500  # steps already logged by every run (probes at 250 and 500: the anchor)

WRITER = r"""
import json, math, sys, time
rate, start, seconds, paths = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
handles = [open(p, "a") for p in paths]
step, t_end, tick = start, time.monotonic() + seconds, 0.1
per_tick = max(1, round(rate * tick))
nxt = time.monotonic()
while time.monotonic() < t_end:
    for _ in range(per_tick):
        step += 1
        for i, fh in enumerate(handles):
            loss = (2.0 + 0.2 * i) * math.exp(-step / 400) + 0.3
            fh.write(json.dumps({"kind": "train", "step": step, "time": time.time(),
                                 "loss": loss, "ar_ce": loss * 0.8, "flow_loss": loss * 0.2,
                                 "lr": 3e-4, "grad_norm": 1.0, "step_s": 1 / rate,
                                 "data_s": 0.0005, "samples": step * 96}) + "\n")
            if step % 100 == 0:
                mae = 3.1 + 0.001 * (step - 500) * (1 + i)
                fh.write(json.dumps({"kind": "eval", "step": step, "time": time.time(),
                                     "eval_chunk_mae": mae, "train_chunk_mae": mae,
                                     "eval_ar_ce": 0.6, "eval_flow_loss": 0.07,
                                     "n_frames": 256}) + "\n")
    for fh in handles:
        fh.flush()
    nxt += tick
    time.sleep(max(0.0, nxt - time.monotonic()))
print(step)
"""


def write_runs(root: Path, n: int, registry_path: Path):
    from fontaine_tui.core.host.memory import hostname
    from fontaine_tui.core.preset.find import load_preset
    from fontaine_tui.core.runfolder import RunFolder
    from fontaine_tui.core.runs.registry import Entry, Registry
    from fontaine_tui.core.verdict.prereg import freeze

    preset = load_preset("demosonly_1gpu")
    reg = Registry(registry_path)
    folders = []
    head = "".join(dumps(r) + "\n" for r in records_upto(START, RIGONLY_LIKE))
    for i in range(n):
        folder = root / f"run{i}"
        folder.mkdir(parents=True)
        (folder / "train_log.jsonl").write_text(head)
        freeze(RunFolder(folder), preset, ["bench"], "here")
        reg.upsert(
            Entry(
                name=f"run{i}",
                run_dir=str(folder),
                host=hostname(),
                preset=preset.name,
                pid=os.getpid(),  # alive for as long as the bench: the runs read as running
                launched_at="2026-08-17T18:41:00Z",
                status="running",
            )
        )
        folders.append(folder)
    return preset, reg, folders


async def measure(
    seconds: float, rate: float, paths: list[Path], start: int
) -> tuple[float, float, int]:
    """This process's CPU over `seconds` while the writer appends to `paths` from `start`.

    Also the writer's last step.
    """
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(rate), str(start), str(seconds + 1), *map(str, paths)],
        stdout=subprocess.PIPE,
    )
    await asyncio.sleep(0.5)  # the writer's start-up is not the console's
    cpu, wall = await window(seconds)
    out, _ = writer.communicate(timeout=seconds + 30)
    return cpu, wall, int(out or 0)


async def run(seconds: float, rate: float, n: int) -> list[dict]:
    from fontaine_tui.console import make_app
    from fontaine_tui.core.follow.local import LocalRun
    from fontaine_tui.widgets.chart import Chart

    root = Path(tempfile.mkdtemp(prefix="fontaine-overlay-"))
    preset, reg, folders = write_runs(root, n, root / "registry.toml")
    app = make_app(
        source=LocalRun(folders[0]), preset=preset, registry=reg, kind="attach", clock=time.time
    )
    out = []
    load0 = os.getloadavg()
    async with app.run_test(size=(120, 40)) as pilot:
        while app.session.store.last_step < START:
            await pilot.pause(0.05)
        await asyncio.sleep(2.0)
        cpu, wall, last = await measure(seconds, rate, [folders[0] / "train_log.jsonl"], START)
        out.append(_row("following one run (monitor)", cpu, wall, rate, 1, load0))
        await pilot.press("r")
        table = app.screen.query_one("#runs-table")
        while table.row_count < n:  # type: ignore[attr-defined]
            await pilot.pause(0.05)
        table.focus()
        for _ in range(n):
            await pilot.press("space", "down")
        await pilot.press("o")
        chart = app.screen.query_one("#overlay-losses", Chart)
        while chart.spec is None or len(chart.spec.curves) < n:
            await pilot.pause(0.05)
        await asyncio.sleep(2.0)
        load1 = os.getloadavg()
        # every run goes on from the step the first one reached (the others skip a stretch)
        logs = [f / "train_log.jsonl" for f in folders]
        cpu, wall, _ = await measure(seconds, rate, logs, last)
        row = _row(f"overlaying {n} runs (overlay)", cpu, wall, rate, n, load1)
        row["replots"] = sum(c.replots for c in app.screen.query(Chart))
        out.append(row)
    return out


def _row(what: str, cpu: float, wall: float, rate: float, runs: int, load0) -> dict:
    return {
        "bench": "overlay_cpu",
        "phase": what,
        "runs_written": runs,
        "lines_per_s_per_run": rate,
        "seconds": round(wall, 1),
        "cpu_s": round(cpu, 3),
        "pct_of_core": round(100 * cpu / wall, 2),
        "loadavg_before": [round(x, 2) for x in load0],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=10.0, help="lines/s per run")
    ap.add_argument("--runs", type=int, default=4)
    args = ap.parse_args()
    for r in asyncio.run(run(args.seconds, args.rate, args.runs)):
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
