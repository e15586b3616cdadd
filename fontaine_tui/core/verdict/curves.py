"""The banked comparators' curves, read as the preset's rule reads this run: each probe's
delta from the anchor (or level), at the steps the banked run measured."""

from __future__ import annotations

import math

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.verdict.presets import Preset
from fontaine_tui.core.verdict.shape import Comparator

_ENTRIES: dict[str, object] = {}  # NAME@sha256 -> Entry: a version never changes, so kept


def _entry(ref: str) -> object | None:
    from fontaine_tui.core.bank import store as bank

    if ref not in _ENTRIES:
        try:
            _ENTRIES[ref] = bank.get(ref)
        except InputError:  # not in this machine's bank: the frozen numbers still read
            return None
    return _ENTRIES[ref]


_CURVES: dict[tuple[str, str, int, str], list[tuple[int, float]]] = {}


def banked_curve(preset: Preset, comp: Comparator, metric: str | None = None
                 ) -> list[tuple[int, float]]:
    """(step, delta or level) at each probe the banked run measured, from the anchor on for a
    delta read; [] for a typed-in comparator or a banked run not in this bank. Kept per
    version and read: a banked version never changes."""
    spec = preset.verdict
    key = (comp.bank, metric or spec.metric, spec.anchor_step, spec.read)
    if comp.bank and key not in _CURVES:
        _CURVES[key] = _curve(preset, comp, key[1])
    return _CURVES.get(key, [])


def _curve(preset: Preset, comp: Comparator, metric: str) -> list[tuple[int, float]]:
    from fontaine_tui.core.bank.store import Entry

    entry = _entry(comp.bank) if comp.bank else None
    if not isinstance(entry, Entry):
        return []
    spec = preset.verdict
    if spec.read == "level":
        return [(s, entry.value(s, metric)) for s in sorted(entry.probes())]
    base = entry.value(spec.anchor_step, metric)
    if not math.isfinite(base):
        return []
    return [(s, entry.value(s, metric) - base) for s in sorted(entry.probes())
            if s >= spec.anchor_step]


def banked_levels(comp: Comparator, metric: str) -> list[tuple[int, float]]:
    """(step, level) at every probe of a banked comparator; [] when typed in or absent."""
    from fontaine_tui.core.bank.store import Entry

    entry = _entry(comp.bank) if comp.bank else None
    if not isinstance(entry, Entry):
        return []
    return [(s, entry.value(s, metric)) for s in sorted(entry.probes())]


def banked_value(comp: Comparator, step: int, metric: str) -> float:
    """One banked number of a comparator (NaN when typed in or not in this bank)."""
    from fontaine_tui.core.bank.store import Entry

    entry = _entry(comp.bank) if comp.bank else None
    return entry.value(step, metric) if isinstance(entry, Entry) else math.nan


def banked_curves(preset: Preset) -> list[tuple[str, list[tuple[int, float]]]]:
    return [(c.name, curve) for c in preset.comparators.values()
            if (curve := banked_curve(preset, c))]
