"""How a read number meets its bounds.

This module holds the class a delta or level reads as, the tolerance of numbers stored with
fewer bits, and two rules combined."""

from __future__ import annotations

import math

from fontaine_tui.core.preset.checks import (
    AMBIGUOUS,
    BY_INSTRUMENT,
    HEALTHY,
    SAME_DRIFT,
    UNDECIDABLE,
)

# Deltas are differences of logged floats: compare at this resolution, so that a delta that
# reads exactly as a bound (3.7623 - 3.4623) is on the bound, not 3e-16 past it.
RESOLUTION = 1e-9


def _round(x: float) -> float:
    scaled = x / RESOLUTION
    if not math.isfinite(scaled):  # |x| beyond ~1e299: nothing to round at this resolution
        return x
    return round(scaled) * RESOLUTION


def ahead(a: float, b: float) -> float:
    """`a - b` counted at RESOLUTION, as a read is compared to its bounds (to 9 decimals).

    Its sign is the comparison's: 3.7623 - 3.4623 is 0.30 from the bound 0.30, not 3e-16 past it.
    Numbers too large to count at RESOLUTION are subtracted as they are."""
    sa, sb = a / RESOLUTION, b / RESOLUTION
    if not (math.isfinite(sa) and math.isfinite(sb)):
        return a - b
    return round((round(sa) - round(sb)) * RESOLUTION, 9)


def read_rule(
    x: float, healthy: float, drift: float, lower: bool = True, tolerance: float = 0.0
) -> str:
    """The class a read `x` gets against its two bounds.

    With lower better: HEALTHY if x <= healthy, SAME-DRIFT if x >= drift. With higher better:
    HEALTHY if x >= healthy, SAME-DRIFT if x <= drift. Else AMBIGUOUS.

    A read within `tolerance` of a bound is on it: the precision its source stored the numbers in
    (a float32 scalar holds some 7 digits), so one run reads the same from every file it wrote.
    Beyond that, numbers are compared at RESOLUTION."""
    if not math.isfinite(x):
        return UNDECIDABLE
    if tolerance and _on(x, healthy, tolerance) and _on(x, drift, tolerance):
        return UNDECIDABLE  # the stored precision cannot tell the two bounds apart here
    d, h, f = _round(x), _round(healthy), _round(drift)
    if _at_or_better(d, h, lower) or _on(x, healthy, tolerance):
        return HEALTHY
    if _at_or_better(f, d, lower) or _on(x, drift, tolerance):
        return SAME_DRIFT
    return AMBIGUOUS


def _at_or_better(a: float, b: float, lower: bool) -> bool:
    """Whether `a` is at `b` or on its better side (below it where lower is better)."""
    return a <= b if lower else a >= b


def _on(x: float, bound: float, tolerance: float) -> bool:
    """Whether the read `x` is on `bound`: within the `tolerance` of its stored precision."""
    return abs(x - bound) <= tolerance


def tolerance(bits: int, *values: float) -> float:
    """How far a sum or difference of `values` may be from the one computed at full precision.

    Each value is stored with `bits` significand bits; 0 for doubles (RESOLUTION covers it)."""
    if bits >= 53:
        return 0.0
    return sum(abs(v) for v in values if math.isfinite(v)) * 2.0**-bits


def combine(raw: str, scaled: str | None) -> str:
    """Agreeing rules give their label; disagreeing ones AMBIGUOUS-BY-INSTRUMENT."""
    if scaled is None:
        return raw
    if UNDECIDABLE in (raw, scaled):
        return UNDECIDABLE
    return raw if raw == scaled else BY_INSTRUMENT
