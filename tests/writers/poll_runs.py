"""`fontaine-tui runs --json` asked every 0.3 s until the file STOP exists: each answer's
lines on stdout, each prefixed with the time it was asked (`python -m tests.writers.poll_runs
STOP`). One process beside each writer, so the looks are not held up by other runs'."""

from __future__ import annotations

import contextlib
import io
import sys
import time
from pathlib import Path

from fontaine_tui.cli import main

stop = Path(sys.argv[1])
while not stop.exists():
    asked, out = time.time(), io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["runs", "--json"])
    for line in out.getvalue().splitlines():
        print(f"{asked:.3f} {line}", flush=True)
    time.sleep(0.3)
