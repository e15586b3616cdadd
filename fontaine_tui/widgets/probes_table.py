"""The probes table: each probe's step, MAEs, deltas and AR CE.

Its columns are step, eval MAE, delta, train MAE, train delta, AR CE and per-dataset MAE.
The engine's columns (eval MAE, train MAE and delta, AR CE) appear only where the run logs
them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from textual.widgets import DataTable

from fontaine_tui.core.verdict.text import signed
from fontaine_tui.model.readout import ENGINE_FIELDS, ProbeRow
from fontaine_tui.widgets.safe import cell

FIXED = ("step", "eval MAE", "delta", "train MAE", "train delta", "eval AR CE")


def _num(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.4f}" if math.isfinite(x) else repr(x)


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
        datasets = sorted({name for r in rows for name in r.breakdown})
        # a rule on another metric than eval MAE gets its own column, first after the step
        other = next((r.metric for r in rows if r.metric != "eval_chunk_mae"), None)
        read = rows[-1].read if rows else "delta"
        # the engine's columns, where the run logs them (another trainer's logs none)
        logged = frozenset().union(*(r.logged for r in rows)) if rows else ENGINE_FIELDS
        mae, train, ar_ce = (
            f in logged for f in ("eval_chunk_mae", "train_chunk_mae", "eval_ar_ce")
        )
        self.clear(columns=True)
        head = [
            FIXED[0],
            *([cell(other)] if other else []),
            *([FIXED[1]] if mae else []),
            read,
            *(FIXED[3:5] if train else ()),
            *([FIXED[5]] if ar_ce else []),
        ]
        self.add_columns(*head, *(cell(d) for d in datasets))
        for r in rows:
            first = [_num(r.value)] if other else []
            cells = [
                *([_num(r.eval_mae)] if mae else []),
                signed(r.delta),
                *([_num(r.train_mae), signed(r.train_delta)] if train else []),
                *([_num(r.ar_ce)] if ar_ce else []),
            ]
            self.add_row(
                str(r.step),
                *first,
                *cells,
                *(_num(r.breakdown.get(d)) for d in datasets),
                key=str(r.step),
            )
