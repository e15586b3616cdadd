"""The telemetry sidecar's bytes per hour of run, and the recorder's CPU, at a sampling interval.

    python bench/telemetry_sidecar.py [--seconds 120] [--interval 10]

The real recorder (`python -m fontaine_tui.core.host.recorder`, as a launch starts it) samples
an engine stand-in (a process with two children) for `seconds`, at `interval` (the default
interval unless given). Its bytes are scaled to an hour: bytes written / seconds measured x
3600; the bytes per sample and the recorder's CPU time (user + system, from /proc, its start-up
included) are said too. On this machine a sample has no GPU: each GPU adds its row (about 100
bytes, the GPU's UUID included) and the reason line goes. Then the bound: the hours the newest
file holds before it is thinned (recorder.BOUND), and the most a week-long run keeps
(2 x BOUND per node).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fontaine_tui.core.host import recorder  # noqa: E402
from fontaine_tui.core.runfolder import TELEMETRY  # noqa: E402

STAND_IN = """
import subprocess, sys, time
kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"]) for _ in range(2)]
time.sleep(float(sys.argv[1]))
for k in kids:
    k.kill()
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=120.0, help="how long the recorder runs")
    ap.add_argument("--interval", type=float, default=recorder.INTERVAL_S)
    args = ap.parse_args()
    import psutil

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "prereg.json").write_text("{}\n")
        engine = subprocess.Popen([sys.executable, "-c", STAND_IN, str(args.seconds)])
        started = psutil.Process(engine.pid).create_time()
        os.environ[recorder.INTERVAL_ENV] = repr(args.interval)
        t0 = time.monotonic()
        rec = recorder.spawn(folder, engine.pid, started)
        cpu = psutil.Process(rec.pid)
        engine.wait()
        times = cpu.cpu_times()  # before it exits, a moment after the engine
        rec.wait(30)
        elapsed = time.monotonic() - t0
        data = (folder / TELEMETRY).read_bytes()
    samples = data.count(b"\n")
    per_hour = len(data) / elapsed * 3600
    print(f"load average {os.getloadavg()[0]:.2f} (2 cores)")
    print(
        f"interval {args.interval:g} s, {elapsed:.1f} s measured: {samples} samples, "
        f"{len(data)} bytes ({len(data) / max(samples, 1):.0f} bytes a sample)"
    )
    print(f"sidecar: {per_hour / 1024:.1f} KiB per hour of run (bytes / seconds x 3600)")
    print(
        f"recorder CPU: {times.user + times.system:.2f} s over {elapsed:.0f} s "
        f"({(times.user + times.system) / elapsed * 100:.2f} % of a core, start-up included)"
    )
    print(
        f"bound: the newest file is thinned past {recorder.BOUND >> 10} KiB "
        f"({recorder.BOUND / per_hour:.1f} h at this rate); a week-long run keeps "
        f"at most {2 * recorder.BOUND >> 10} KiB per node, its whole span"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
