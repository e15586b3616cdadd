"""The banked comparators' curves, read as the preset's rule reads this run.

Each curve holds each probe's delta from the anchor (or level), at the steps the banked run
measured.

Each comparator carries the banked entry its preset read when it was loaded, and the curve
of the rule's metric (`Comparator.entry`, `Comparator.curve`): the curves come from them,
so a read never goes back to the bank."""

from __future__ import annotations

import math
from collections.abc import Sequence

from fontaine_tui.core.preset.comparators import metric_curve
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.preset.rule import Comparator


def banked_levels(comp: Comparator, metric: str) -> list[tuple[int, float]]:
    """(step, level) at every probe of a banked comparator; [] when typed in or absent."""
    entry = comp.entry
    return [] if entry is None else [(s, entry.value(s, metric)) for s in sorted(entry.probes())]


def banked_curve(
    preset: Preset, comp: Comparator, metric: str | None = None
) -> Sequence[tuple[int, float]]:
    """The (step, delta or level) at each probe the banked run measured.

    For a delta read, the points run from the anchor on. Empty for a typed-in comparator or a
    banked run not in this bank."""
    spec = preset.verdict
    if metric is None or metric == spec.metric:
        return comp.curve  # read with the preset
    if comp.entry is None:
        return ()
    return metric_curve(comp.entry, metric, spec.read, spec.anchor_step)


def banked_value(comp: Comparator, step: int, metric: str) -> float:
    """One banked number of a comparator (NaN when typed in or not in this bank)."""
    entry = comp.entry
    return math.nan if entry is None else entry.value(step, metric)


def banked_curves(preset: Preset) -> list[tuple[str, Sequence[tuple[int, float]]]]:
    return [
        (c.name, curve) for c in preset.comparators.values() if (curve := banked_curve(preset, c))
    ]
