"""train_log.jsonl writer (schema v1): one whole line per write, flushed per record."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

SCHEMA = 1


def _clean(value):
    """Plain Python floats/ints/containers (json writes NaN/Infinity via allow_nan)."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and math.isfinite(value):
        return float(value)
    return value


class LogWriter:
    """Appends records; a no-op on ranks other than 0."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._fd: int | None = None
        if path is not None:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._heal_torn_tail(path)

    def _heal_torn_tail(self, path: Path) -> None:
        """End a line a killed writer left without its newline, so the next record starts fresh.

        Readers skip the torn line.
        """
        size = path.stat().st_size
        if size and self._fd is not None:
            with open(path, "rb") as f:
                f.seek(size - 1)
                if f.read(1) != b"\n":
                    os.write(self._fd, b"\n")

    def write(self, kind: str, step: int, **fields) -> None:
        if self._fd is None:
            return
        record = {"kind": kind, "step": int(step), "time": time.time(), **_clean(fields)}
        line = json.dumps(record, allow_nan=True, separators=(",", ":")) + "\n"
        os.write(self._fd, line.encode())

    def event(self, step: int, event: str, detail: str) -> None:
        self.write("event", step, event=event, detail=detail)

    def alert(self, step: int, level: str, title: str, text: str) -> None:
        """An alert for the run's owner (level info, warn or alert): the console relays it."""
        self.write("alert", step, level=level, title=title, text=text)

    def failed(self, step: int, exc: BaseException) -> int:
        """An unexpected error: an `error` event for the console, one line on stderr, exit 1."""
        self.event(step, "error", f"{type(exc).__name__}: {exc}")
        print(f"engine: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
