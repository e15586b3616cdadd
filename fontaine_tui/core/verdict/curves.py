"""The banked comparators' curves, read as the preset's rule reads this run: each probe's
delta from the anchor (or level), at the steps the banked run measured."""

from __future__ import annotations

import math

from fontaine_tui.core.bank.store import Entry, get
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.preset.rule import Comparator

# NAME@sha256 -> its entry, and (ref, metric, anchor, read) -> its curve: a banked version
# never changes, so both are kept once read. A ref this machine's bank lacks is not kept: the
# frozen numbers still read, and it is looked up again next time.
_ENTRIES: dict[str, Entry] = {}
_CURVES: dict[tuple[str, str, int, str], list[tuple[int, float]]] = {}


def _entry(comp: Comparator) -> Entry | None:
    if not comp.bank:
        return None
    if comp.bank not in _ENTRIES:
        try:
            _ENTRIES[comp.bank] = get(comp.bank)
        except InputError:
            return None
    return _ENTRIES[comp.bank]


def banked_levels(comp: Comparator, metric: str) -> list[tuple[int, float]]:
    """(step, level) at every probe of a banked comparator; [] when typed in or absent."""
    entry = _entry(comp)
    return [] if entry is None else [(s, entry.value(s, metric)) for s in sorted(entry.probes())]


def banked_curve(
    preset: Preset, comp: Comparator, metric: str | None = None
) -> list[tuple[int, float]]:
    """(step, delta or level) at each probe the banked run measured, from the anchor on for a
    delta read; [] for a typed-in comparator or a banked run not in this bank."""
    spec = preset.verdict
    key = (comp.bank, metric or spec.metric, spec.anchor_step, spec.read)
    if key not in _CURVES:
        levels = banked_levels(comp, key[1])
        if not levels:
            return []
        _CURVES[key] = levels if spec.read == "level" else _deltas(levels, spec.anchor_step)
    return _CURVES[key]


def _deltas(levels: list[tuple[int, float]], anchor: int) -> list[tuple[int, float]]:
    base = dict(levels).get(anchor, math.nan)
    if not math.isfinite(base):
        return []
    return [(s, v - base) for s, v in levels if s >= anchor]


def banked_value(comp: Comparator, step: int, metric: str) -> float:
    """One banked number of a comparator (NaN when typed in or not in this bank)."""
    entry = _entry(comp)
    return math.nan if entry is None else entry.value(step, metric)


def banked_curves(preset: Preset) -> list[tuple[str, list[tuple[int, float]]]]:
    return [
        (c.name, curve) for c in preset.comparators.values() if (curve := banked_curve(preset, c))
    ]
