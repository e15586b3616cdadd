"""One look at a run's process tree vs `ps` listing the same processes, side by side.

    python bench/proctree_look.py [--ranks 4] [--workers 4] [--repeat 30]

A root starts RANKS processes (RANK set, as torchrun does), each of which forks WORKERS
children; all of them sleep. The processes mode looks at such a tree every two seconds: its
look (roles, state, CPU, PSS, threads; NVML asked too, as in the console) is timed against
`ps -o pid,ppid,stat,pcpu,rss,nlwp,args -s ROOT`, which lists the same session's processes.
Prints one JSON line: the medians and their ratio, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fontaine_tui.core.host.proctree import TreeLook  # noqa: E402

TREE = """
import os, subprocess, sys, time
if sys.argv[1] == "rank":
    for _ in range(int(sys.argv[2])):
        if os.fork() == 0:
            time.sleep(3600)
            os._exit(0)
    time.sleep(3600)
else:
    ranks, workers = int(sys.argv[1]), sys.argv[2]
    procs = [subprocess.Popen([sys.executable, "-c", sys.argv[3], "rank", workers],
                              env={**os.environ, "RANK": str(r)}) for r in range(ranks)]
    time.sleep(3600)
"""


def median_ms(call, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        call()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    want = 1 + args.ranks * (1 + args.workers)
    root = subprocess.Popen(
        [sys.executable, "-c", TREE, str(args.ranks), str(args.workers), TREE],
        start_new_session=True,
    )
    try:
        looker = TreeLook()
        deadline = time.monotonic() + 60
        while len(looker.look(root.pid).members) < want:
            assert time.monotonic() < deadline, "the tree did not come up"
            time.sleep(0.2)
        ps = ["ps", "-o", "pid,ppid,stat,pcpu,rss,nlwp,args", "-s", str(root.pid)]
        listed = subprocess.run(ps, capture_output=True, text=True, check=True).stdout
        look_ms = median_ms(lambda: looker.look(root.pid), args.repeat)
        ps_ms = median_ms(lambda: subprocess.run(ps, capture_output=True, check=True), args.repeat)
        print(
            json.dumps(
                {
                    "processes": want,
                    "ps_rows": len(listed.splitlines()) - 1,
                    "look_ms": round(look_ms, 2),
                    "ps_ms": round(ps_ms, 2),
                    "ratio": round(look_ms / ps_ms, 2),
                    "load": [round(x, 2) for x in os.getloadavg()],
                }
            )
        )
    finally:
        os.killpg(root.pid, signal.SIGKILL)
        root.wait(10)


if __name__ == "__main__":
    main()
