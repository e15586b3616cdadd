"""Export a read: verdict.json (atomically) and an overlay chart PNG (matplotlib, optional)."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fontaine_tui import __version__
from fontaine_tui.core.atomic import replace_own
from fontaine_tui.core.charts.chart import ChartSpec, Curve
from fontaine_tui.core.verdict import review
from fontaine_tui.core.verdict.record import Verdict

CHART_HINT = "pip install 'fontaine-tui[chart]'"
CHART_NAME = "disc_overlay.png"
# plotext colour names as matplotlib colours (yellow is unreadable on white paper)
_COLORS = {
    "yellow": "darkgoldenrod",
    "cyan": "tab:cyan",
    "magenta": "tab:purple",
    "green": "tab:green",
    "red": "tab:red",
    "blue": "tab:blue",
}


@dataclass(frozen=True, slots=True)
class ExportResult:
    verdict_path: Path
    chart_path: Path | None
    chart_message: str  # why there is no chart, and how to get one


PNG_SOFTWARE = "fontaine-tui"  # the PNG's Software text chunk: how an export is recognised


def _our_verdict(head: bytes) -> bool:
    return b'"schema": "fontaine-tui/verdict/' in head


def _our_png(head: bytes) -> bool:
    return head.startswith(b"\x89PNG") and PNG_SOFTWARE.encode() in head


def write_verdict(path: str | Path, verdict: Verdict) -> Path:
    """Write verdict.json atomically, with the review trail beside it as checked now.

    The trail's head it records is what a later check holds the trail to (a trail removed
    with its head file is then named). An existing verdict.json that is not ours is never
    replaced (InputError)."""
    path = Path(path)
    verdict = replace(verdict, review=review.state(path.parent))
    replace_own(
        path, json.dumps(verdict.to_json(), indent=2) + "\n", _our_verdict, "a verdict.json"
    )
    return path


def render_png(spec: ChartSpec) -> bytes:
    """The chart spec drawn by matplotlib; ImportError when the `chart` extra is missing."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 5), dpi=110)
    ax = fig.add_subplot()
    for b in spec.bands:
        ax.fill_between(
            b.xs,
            b.lo,
            b.hi,
            color=_COLORS.get(b.color, b.color),
            alpha=0.25,
            label=b.label,
            zorder=1,
        )
    for c in sorted(spec.curves, key=lambda c: not c.faint):  # the faint ones beneath
        _draw_curve(ax, c)
    for h in spec.hlines:
        ax.axhline(h.y, color=_COLORS.get(h.color, h.color), linestyle="--", label=h.label)
    for m in spec.marks:
        ax.scatter([m.x], [m.y], color=_COLORS.get(m.color, m.color), marker="D", zorder=3)
        ax.annotate(
            m.label, (m.x, m.y), textcoords="offset points", xytext=(-6, 4), ha="right", fontsize=8
        )
    if spec.xlim:
        ax.set_xlim(*spec.xlim)
    if spec.ylog:
        ax.set_yscale("log")
    ax.set_title(spec.title, fontsize=10)
    ax.set_xlabel(spec.xlabel)
    ax.set_ylabel(spec.ylabel)
    if spec.note:
        ax.text(0.01, 0.01, spec.note, transform=ax.transAxes, fontsize=8)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": f"{PNG_SOFTWARE} {__version__}"})
    return buf.getvalue()


def _draw_curve(ax: Any, c: Curve) -> None:
    """One curve: faint and thin, as points alone, or a line (marked while short)."""
    color = _COLORS.get(c.color, c.color)
    if c.faint:
        ax.plot(c.xs, c.ys, color=color, label=c.label, alpha=0.3, linewidth=0.8, zorder=2)
    elif c.points:
        ax.scatter(c.xs, c.ys, color=color, label=c.label, zorder=3)
    else:
        ax.plot(c.xs, c.ys, color=color, label=c.label, marker="o" if len(c.xs) < 20 else None)


def export(folder: str | Path, verdict: Verdict, spec: ChartSpec) -> ExportResult:
    """verdict.json always; the PNG when matplotlib is installed, else a hint how to get it."""
    folder = Path(folder)
    vpath = write_verdict(folder / "verdict.json", verdict)
    try:
        png = render_png(spec)
    except ImportError:
        return ExportResult(vpath, None, f"no chart image: matplotlib is missing ({CHART_HINT})")
    cpath = folder / CHART_NAME
    replace_own(cpath, png, _our_png, "a chart image")
    return ExportResult(vpath, cpath, "")
