"""The verdict wing: the frozen bounds and the pure rules that read a run against them.
`presets.py` (the preset and its labels), `rules.py` (the verdict),
`record.py` (the Verdict record and verdict.json), `prereg.py` (the frozen
pre-registration), `ledger.py` (amendments), `review.py` (the review chain), `export.py`
(verdict.json and the chart), `text.py` (a verdict as text), `chart.py` (what to draw)."""

from __future__ import annotations

from fontaine_tui.core.verdict.checks import LABELS
from fontaine_tui.core.verdict.ledger import parse_amendments, read_amendments
from fontaine_tui.core.verdict.prereg import Prereg, parse_prereg, read_prereg
from fontaine_tui.core.verdict.presets import Amendment, Preset, load_preset
from fontaine_tui.core.verdict.record import Verdict
from fontaine_tui.core.verdict.rules import compute_verdict, verdict_series
from fontaine_tui.core.verdict.shape import Comparator, VerdictSpec
from fontaine_tui.core.verdict.text import headline, render

__all__ = [
    "LABELS",
    "Amendment",
    "Comparator",
    "Prereg",
    "Preset",
    "Verdict",
    "VerdictSpec",
    "compute_verdict",
    "headline",
    "load_preset",
    "parse_amendments",
    "parse_prereg",
    "read_amendments",
    "read_prereg",
    "render",
    "verdict_series",
]
