"""The recorder's telemetry history read back: each node's samples, and what could not be read.

A sidecar (core/host/recorder.py) is read as bytes: its thinned `.1` first, then the newest
file. A line that is not a sample (garbage, another version, no time) is counted, a last line
without its newline (the recorder caught writing, a torn copy) is counted apart; neither stops
the read. Counters (disk and network bytes) become rates between two samples of one node.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fontaine_tui.core.limits import json_loads

SERIES = (  # (key, label, unit): what the panel draws, in its order
    ("gpu_util", "GPU util", "%"),
    ("gpu_mem", "GPU mem", "B"),
    ("ram", "host RAM", "B"),
    ("mem", "{who} mem", "B"),  # the tree's PSS (an older recorder's line: its RSS)
    ("cpu", "{who} CPU", "%"),  # {who}: the run's process, Handle.who ("engine", "command")
    ("disk_free", "disk free", "B"),
    ("disk_read", "disk read", "B/s"),
    ("disk_write", "disk write", "B/s"),
    ("net_in", "net in", "B/s"),
    ("net_out", "net out", "B/s"),
)


@dataclass(frozen=True, slots=True)
class Sample:
    """One line of a sidecar: a time, a node, the step last logged, and the values."""

    t: float
    node: str
    step: int | None
    values: dict[str, float | None]  # by SERIES key; None where the host had no number
    counters: dict[str, int | None]  # disk_read, disk_write, net_in, net_out: running totals
    gpu_reason: str = ""


@dataclass(slots=True)
class History:
    """Every node's samples in time order, and the lines that could not be read."""

    nodes: dict[str, list[Sample]] = field(default_factory=dict)
    garbage: int = 0  # lines that are not a sample
    torn: int = 0  # files whose last line had no newline
    missing: bool = True  # no sidecar at all

    def finish(self) -> History:
        """Sort each node's samples by time, one per time, and fill in the rates."""
        for node, got in self.nodes.items():
            seen: dict[float, Sample] = {s.t: s for s in got}
            ordered = [seen[t] for t in sorted(seen)]
            for prev, cur in zip(ordered, ordered[1:], strict=False):
                _fill_rates(prev, cur)
            self.nodes[node] = ordered
        return self

    def notice(self, name: str) -> str:
        """One line saying what could not be read, or ""."""
        parts = []
        if self.garbage:
            parts.append(f"{self.garbage} line{'s' if self.garbage != 1 else ''} not a sample")
        if self.torn:
            parts.append("a torn last line" if self.torn == 1 else f"{self.torn} torn last lines")
        return f"{name}: {', '.join(parts)}: not read" if parts else ""


def _fill_rates(prev: Sample, cur: Sample) -> None:
    """Each counter's rate from `prev` to `cur`, into `cur`'s values.

    None where the counter went back (a restart) or no time passed between them is left."""
    dt = cur.t - prev.t
    for key, total in cur.counters.items():
        before = prev.counters.get(key)
        if total is not None and before is not None and total >= before and dt > 0:
            rate = (total - before) / dt
            cur.values[key] = rate if math.isfinite(rate) else None


BOUND = 2**63  # no count of bytes, step or time reaches it: past it, a field is not a number


class _Bad(ValueError):
    """A field of a sample that is not what the recorder writes there."""


def _num(value: Any, hi: float = BOUND) -> float | None:
    """A finite number from 0 up to `hi` as a float, None for a missing one (JSON null)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad
    if isinstance(value, int) and not 0 <= value < BOUND:
        raise _Bad  # a 400-digit integer: no float holds it
    number = float(value)
    if not (math.isfinite(number) and 0 <= number <= hi):
        raise _Bad  # NaN, inf, a negative amount
    return number


def _int(value: Any) -> int | None:
    """A whole number from 0 below BOUND, None for a missing one (JSON null)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < BOUND:
        raise _Bad
    return value


def _part(doc: dict[str, Any], key: str) -> dict[str, Any]:
    value = doc.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Bad
    return value


def parse(line: bytes) -> Sample | None:
    """One sidecar line as a Sample; None for a line that is not one.

    Every field read must be what the recorder writes there: a finite number of the right
    kind and range (no NaN, no infinity, nothing negative, no number past BOUND), or null.
    One field that is not makes the whole line one not read, so that nothing else is drawn
    from a line that cannot be trusted."""
    try:
        doc = json_loads(line)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("v") != 1:
        return None
    try:
        return _sample(doc)
    except _Bad:
        return None


def _sample(doc: dict[str, Any]) -> Sample | None:
    t, node = _num(doc.get("t")), doc.get("node")
    if t is None or not isinstance(node, str):
        return None
    values: dict[str, float | None] = {key: None for key, _, _ in SERIES}
    values["gpu_util"], values["gpu_mem"] = _gpu_values(doc.get("gpus"))
    values["ram"] = _num(_part(doc, "ram").get("used"))
    engine = _part(doc, "engine")
    mem = engine.get("mem", engine.get("rss"))  # "rss": written before the PSS
    values["mem"], values["cpu"] = _num(mem), _num(engine.get("cpu"))
    disk, net = _part(doc, "disk"), _part(doc, "net")
    values["disk_free"] = _num(disk.get("free"))
    counters = {
        "disk_read": _int(disk.get("read")),
        "disk_write": _int(disk.get("write")),
        "net_in": _int(net.get("in")),
        "net_out": _int(net.get("out")),
    }
    reason = doc.get("gpu_reason")
    return Sample(
        t,
        node,
        _int(doc.get("step")),
        values,
        counters,
        reason if isinstance(reason, str) else "",
    )


def _gpu_values(gpus: Any) -> tuple[float | None, float | None]:
    """The GPUs' mean utilization and their memory in use together; None for what none says."""
    if gpus is None:
        return None, None
    if not (isinstance(gpus, list) and all(isinstance(g, dict) for g in gpus)):
        raise _Bad
    utils = _known(_num(g.get("util"), 100.0) for g in gpus)
    mems = _known(_num(g.get("mem")) for g in gpus)
    return (sum(utils) / len(utils) if utils else None), (sum(mems) if mems else None)


def _known(values: Iterable[float | None]) -> list[float]:
    """The values that are not None (a GPU that did not say), in their order."""
    return [v for v in values if v is not None]


CHECK = 64  # bytes before a file's read offset that must still be there for it to go on


class FileRead:
    """One sidecar read again and again: only what was appended since is parsed.

    A file that no longer holds, just before where the last read stopped, the bytes it held
    then (thinned, rewritten, replaced) is read again from its start."""

    def __init__(self) -> None:
        self.offset = 0  # bytes of whole lines parsed
        self.check = b""
        self.samples: list[Sample] = []
        self.garbage = 0

    def _restart(self) -> None:
        self.offset, self.check, self.samples, self.garbage = 0, b"", [], 0

    def feed(self, data: bytes) -> bool:
        """Parse what is new in `data` (the whole file); whether its last line is torn."""
        if len(data) < self.offset or data[self.offset - len(self.check) : self.offset] != (
            self.check
        ):
            self._restart()  # the file is another: start again
        end = data.rfind(b"\n") + 1
        for line in data[self.offset : end].split(b"\n"):
            if not line.strip():
                continue
            s = parse(line)
            if s is None:
                self.garbage += 1
            else:
                self.samples.append(s)
        if end > self.offset:
            self.offset, self.check = end, data[max(0, end - CHECK) : end]
        return end < len(data)


def merged(reads: Iterable[tuple[FileRead, bool]]) -> History:
    """One history of several files' reads (each with whether its last line is torn)."""
    history = History()
    for read, torn in reads:
        history.missing = False
        history.garbage += read.garbage
        history.torn += torn
        for s in read.samples:
            history.nodes.setdefault(s.node, []).append(s)
    return history.finish()


def read_history(files: Iterable[bytes | None]) -> History:
    """The history in `files` (each file's bytes, None where it is missing), oldest first."""
    reads = []
    for data in files:
        if data is not None:
            read = FileRead()
            reads.append((read, read.feed(data)))
    return merged(reads)
