"""The probes table: step, eval MAE, delta, train MAE, train delta, AR CE, per-dataset MAE."""

from __future__ import annotations

import math
from collections.abc import Sequence

from textual.widgets import DataTable

from fontaine_tui.core.verdict.text import signed
from fontaine_tui.model.readout import ProbeRow
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
        self.clear(columns=True)
        head = [FIXED[0], *([cell(other)] if other else []), FIXED[1], read, *FIXED[3:]]
        self.add_columns(*head, *(cell(d) for d in datasets))
        for r in rows:
            first = [_num(r.value)] if other else []
            self.add_row(str(r.step), *first, _num(r.eval_mae), signed(r.delta),
                         _num(r.train_mae), signed(r.train_delta), _num(r.ar_ce),
                         *(_num(r.breakdown.get(d)) for d in datasets), key=str(r.step))
