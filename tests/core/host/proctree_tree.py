"""A real process tree as a launcher leaves it: ranks started with RANK, a DataLoader worker.

Run as a script: the parent starts two ranks (RANK=0 and 1, as torchrun does); rank 0 iterates a
torch DataLoader with one worker, rank 1 spins on the CPU and writes each SIGUSR1 it gets into
the file named by its argument. The processes stay until the parent is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time


def rank0() -> None:
    import torch.utils.data as tud

    class Slow(tud.Dataset):
        def __len__(self) -> int:
            return 1000

        def __getitem__(self, i: int) -> int:
            time.sleep(3600)
            return i

    for _ in tud.DataLoader(Slow(), num_workers=1):
        pass


def rank1(record: str) -> None:
    def got(signum: int, frame: object) -> None:
        with open(record, "a") as fh:
            fh.write(f"{signal.Signals(signum).name}\n")

    signal.signal(signal.SIGUSR1, got)
    while True:  # busy, so its CPU % is high
        sum(range(10_000))


def main() -> None:
    if sys.argv[1] == "rank":
        rank0() if os.environ["RANK"] == "0" else rank1(sys.argv[2])
        return
    ranks = [
        subprocess.Popen(
            [sys.executable, __file__, "rank", sys.argv[1]], env={**os.environ, "RANK": str(r)}
        )
        for r in (0, 1)
    ]
    for p in ranks:
        p.wait()


if __name__ == "__main__":
    main()
