"""A printed-lines pattern is judged by its own cost, not by the machine's load.

Busy processes (twice as many as the cores) keep the host loaded while a log is read: an
honest pattern (docs/own-trainer.md's) passes over a long log, and a backtracking one is still
refused within its bound."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.printed import LinesDecoder

# docs/own-trainer.md's printed-lines patterns
PATTERNS = [
    r"step:(?P<step>\S+) .* loss:(?P<loss>\S+) grdn:(?P<grad_norm>\S+) lr:(?P<lr>\S+)",
    r"step:(?P<step>\S+) .* success:(?P<success>\S+)",
]
LINES = 40_000  # the old wall-time sum refused it near line 4,000 on a busy host


@pytest.fixture
def busy_host() -> Iterator[None]:
    """The host kept busy: 2 spinning processes a core, stopped (each by its id) after."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(2 * (os.cpu_count() or 1))
    ]
    try:
        time.sleep(0.5)
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def honest_log(n: int) -> bytes:
    return b"".join(
        b"INFO 2025-01-01 12:00:00 ts/train.py:123 step:%d smpl:%d ep:1 epch:0.10 "
        b"loss:0.%03d grdn:1.234 lr:1.0e-04 updt_s:0.312 data_s:0.004\n" % (i, i * 8, i % 1000)
        for i in range(1, n + 1)
    )


def test_an_honest_pattern_passes_on_a_busy_host(busy_host: None) -> None:
    decoder = LinesDecoder(patterns=PATTERNS)
    records = decoder.feed(honest_log(LINES)) + decoder.finish()
    assert len(records) == LINES
    assert decoder.bad_count == 0


def test_a_backtracking_pattern_is_refused_on_a_busy_host(busy_host: None) -> None:
    decoder = LinesDecoder(patterns=[r"note:(a|aa)+b(?P<step>\d+) (?P<x>\S+)"])
    line = b"step:1 loss:1.0 note:" + b"a" * 24 + b"\n"
    start = time.monotonic()
    with pytest.raises(InputError, match="slow searches took over 1 s"):
        decoder.feed(line * 100_000)
    # 1 s of its own CPU time, on a host where it gets a share of a core
    assert time.monotonic() - start < 30
