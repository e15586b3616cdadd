"""`fontaine-tui runs --json` asked every 0.3 s until the file STOP exists: each answer's
lines on stdout, each prefixed with the time it was asked (`python -m tests.writers.poll_runs
STOP`). One process beside each writer, so the looks are not held up by other runs'. It ends
too when the process that started it is gone (a test process ended past its time bound never
writes STOP), so that no poller outlives its test."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from pathlib import Path

from fontaine_tui.cli import main

stop, parent = Path(sys.argv[1]), os.getppid()
while not stop.exists() and os.getppid() == parent:
    asked, out = time.time(), io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["runs", "--json"])
    for line in out.getvalue().splitlines():
        print(f"{asked:.3f} {line}", flush=True)
    time.sleep(0.3)
