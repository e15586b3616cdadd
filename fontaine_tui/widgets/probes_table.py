"""The probes table: each probe's step, MAEs, deltas and AR CE.

Its columns are step, eval MAE, delta, train MAE, train delta, AR CE and per-dataset MAE.
The engine's columns (eval MAE, train MAE and delta, AR CE) appear only where the run logs
them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from textual.widgets import DataTable

from fontaine_tui.core.verdict.text import signed
from fontaine_tui.model.readout import ENGINE_FIELDS, ProbeRow
from fontaine_tui.widgets.safe import cell

# a column: its header, and its cell for a row
Column = tuple[str, Callable[[ProbeRow], str]]


def _num(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.4f}" if math.isfinite(x) else repr(x)


def _columns(rows: Sequence[ProbeRow]) -> list[Column]:
    """The columns shown for `rows`, in order.

    The step; the rule's metric when it is not eval MAE; the engine's columns where the run
    logs them (another trainer's logs none) around the rule's read (its delta or level); then
    one per dataset of the breakdown."""
    other = _other_metric(rows)
    read = rows[-1].read if rows else "delta"
    logged = _logged(rows)
    datasets = sorted({name for r in rows for name in r.breakdown})
    candidates: list[tuple[bool, str, Callable[[ProbeRow], str]]] = [
        (True, "step", lambda r: str(r.step)),
        (bool(other), cell(other), lambda r: _num(r.value)),
        ("eval_chunk_mae" in logged, "eval MAE", lambda r: _num(r.eval_mae)),
        (True, read, lambda r: signed(r.delta)),
        ("train_chunk_mae" in logged, "train MAE", lambda r: _num(r.train_mae)),
        ("train_chunk_mae" in logged, "train delta", lambda r: signed(r.train_delta)),
        ("eval_ar_ce" in logged, "eval AR CE", lambda r: _num(r.ar_ce)),
        *((True, cell(d), _dataset(d)) for d in datasets),
    ]
    return [(head, value) for shown, head, value in candidates if shown]


def _other_metric(rows: Sequence[ProbeRow]) -> str:
    """The rule's metric when it is not eval MAE ("" when it is)."""
    return next((r.metric for r in rows if r.metric != "eval_chunk_mae"), "")


def _logged(rows: Sequence[ProbeRow]) -> frozenset[str]:
    """The engine's probe fields the run logs (all of them before its first probe)."""
    return frozenset().union(*(r.logged for r in rows)) if rows else ENGINE_FIELDS


def _dataset(name: str) -> Callable[[ProbeRow], str]:
    return lambda r: _num(r.breakdown.get(name))


class ProbesTable(DataTable):
    DEFAULT_CSS = """
    ProbesTable { height: auto; max-height: 12; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, zebra_stripes=True, cursor_type="row")
        self._key: object = None

    def show(self, rows: Sequence[ProbeRow]) -> None:
        key = tuple(rows)
        if key == self._key:
            return
        self._key = key
        shown = _columns(rows)
        self.clear(columns=True)
        self.add_columns(*(head for head, _ in shown))
        for r in rows:
            self.add_row(*(value(r) for _, value in shown), key=str(r.step))
