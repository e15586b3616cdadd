"""A telemetry history as lines of unicode blocks: one line per series, per node.

Each line is the series' label, its sparkline (the whole history in `width` columns, each
column the mean of its samples, drawn between the series' least and most, GPU utilisation
between 0 and 100 %) and its latest value. A series the host had no number for is
said once ("none"), never drawn as zeros.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fontaine_tui.core.host.history import SERIES, History, Sample
from fontaine_tui.core.text import GIB, MIB

BLOCKS = "▁▂▃▄▅▆▇█"
# with several nodes, each node's block keeps to what differs from node to node
SEVERAL = ("gpu_util", "gpu_mem", "ram", "mem", "net_in", "net_out")


def sparkline(
    values: Sequence[float | None], width: int, lo: float | None = None, hi: float | None = None
) -> str:
    """`values` in `width` columns of blocks, from `lo` to `hi` (their least and most if None).

    Each column is the mean of its samples; a column with no value is a space."""
    n = min(width, len(values))
    if n <= 0:
        return ""
    cols = _means(values, n)
    seen = [v for v in cols if v is not None]
    low = lo if lo is not None else min(seen, default=0.0)
    high = hi if hi is not None else max(seen, default=0.0)
    return "".join(_block(v, low, high) for v in cols)


def _means(values: Sequence[float | None], n: int) -> list[float | None]:
    """`values` in `n` columns, each the mean of its finite samples (None where none is)."""
    cols: list[float | None] = []
    for c in range(n):
        chunk = values[c * len(values) // n : (c + 1) * len(values) // n]
        known = [v for v in chunk if v is not None and math.isfinite(v)]  # never a NaN
        cols.append(sum(known) / len(known) if known else None)
    return cols


def _block(v: float | None, low: float, high: float) -> str:
    """One column's block between `low` and `high`; a space where it has no value."""
    top = len(BLOCKS) - 1
    if v is None:
        return " "
    if high - low <= 1e-6 * max(abs(high), 1.0):
        return BLOCKS[top // 2] if high > 0 else BLOCKS[0]  # flat: middle; none: low
    return BLOCKS[max(0, min(top, round((v - low) / (high - low) * top)))]


def amount(value: float | None, unit: str) -> str:
    """A latest value in the series' unit: 93%, 12.4 GiB, 3.1 MiB/s."""
    if value is None:
        return "—"
    if unit == "%":
        return f"{value:.0f}%"
    per = "/s" if unit == "B/s" else ""
    if value >= GIB:
        return f"{value / GIB:.1f} GiB{per}"
    if value >= MIB:
        return f"{value / MIB:.1f} MiB{per}"
    return f"{value / 1024:.0f} KiB{per}"


def span(seconds: float) -> str:
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} d"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min"


def node_lines(
    node: str,
    samples: Sequence[Sample],
    width: int,
    keys: Sequence[str] | None = None,
    who: str = "engine",
) -> list[tuple[str, bool]]:
    """(text, muted) lines of one node's history: a head line, then one per series.

    `keys` limits the series to those (None: every one); `who` names the run's process in
    its series' labels (Handle.who: "engine", "command")."""
    last = samples[-1]
    step = "" if last.step is None else f" · step {last.step}"
    out = [(f"{node} · {span(last.t - samples[0].t)}{step}", True)]
    labels = [(key, label.format(who=who), unit) for key, label, unit in SERIES]
    pad = max(10, *(len(label) for _, label, _ in labels))
    for key, label, unit in labels:
        if keys is None or key in keys:
            out += _series_lines(key, label.ljust(pad), unit, samples, width)
    return out


def _series_lines(
    key: str, label: str, unit: str, samples: Sequence[Sample], width: int
) -> list[tuple[str, bool]]:
    """A series' line; none where the host had no number for it, save the GPU's reason."""
    values = [s.values.get(key) for s in samples]
    if all(v is None for v in values):
        if key == "gpu_util":
            return [(f"no GPU: {samples[-1].gpu_reason or 'no number recorded'}", True)]
        return []
    latest = next((v for v in reversed(values) if v is not None), None)
    scale = (0.0, 100.0) if key == "gpu_util" else (None, None)  # bytes: their own range
    return [(f"{label} {sparkline(values, width, *scale)} {amount(latest, unit)}", False)]


def history_lines(history: History, width: int, who: str = "engine") -> list[tuple[str, bool]]:
    """Every node's lines, nodes in name order (several: each with the SEVERAL series).

    `who` names the run's process in the labels (Handle.who: "engine", "command")."""
    out: list[tuple[str, bool]] = []
    keys = SEVERAL if len(history.nodes) > 1 else None
    for node in sorted(history.nodes):
        out += node_lines(node, history.nodes[node], width, keys, who)
    return out
