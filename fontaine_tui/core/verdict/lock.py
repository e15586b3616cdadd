"""Distance to the bounds and the decision lock.

At each probe, this module gives how far the read is from each bound, and from which probe no
remaining probe can change the verdict. That depends on the largest change one probe can
bring (stated in the preset, else the largest step-to-step change of the banked comparators'
curves; which one is said) and on how many probes remain. The count of probes comes from the
cadence: the smallest gap between the probes seen, never more than the preset states, rounded
up where the endpoint is off the cadence (it is probed too). With the cadence unknown, there is
no lock."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fontaine_tui.core.preset.rule import VerdictSpec
from fontaine_tui.core.verdict.bounds import ahead, combine, read_rule


@dataclass(frozen=True, slots=True)
class Distance:
    step: int
    to_healthy: float  # how far the read may move before it leaves HEALTHY (< 0: not healthy)
    to_drift: float  # how far it is from the drift bound (< 0: past it)


@dataclass(frozen=True, slots=True)
class Lock:
    step: int | None  # the first probe from which the verdict cannot change; None: not yet
    label: str | None  # the verdict it locked on
    max_change: float | None  # the largest change one probe can bring (None: unknown)
    source: str  # where max_change comes from, in words
    distances: tuple[Distance, ...] = ()
    every: int | None = None  # the probe cadence counted on (None: unknown, no lock claimed)
    every_from: str = ""  # where `every` comes from, in words
    stops: bool = False  # the preset's [gates] stop_on_lock: the run stops once it locks

    def describe(self) -> str:
        """The lock in words, and the stop the preset pre-registered on it."""
        return self._words() + (
            "; [gates] stop_on_lock: the run stops on a locked decision or at the GPU-hours gate"
            if self.stops
            else ""
        )

    def _words(self) -> str:
        if self.every is None and self.every_from:
            return f"decision not locked: the probe cadence is unknown ({self.every_from})"
        if self.max_change is None:
            return f"decision lock unknown: {self.source}"
        if self.step is None:
            return (
                f"decision not locked: a remaining probe can still change it (largest "
                f"change per probe {self.max_change:.4f}, {self.source})"
            )
        return (
            f"decision locked at step {self.step} ({self.label}): no remaining probe can "
            f"change it (largest change per probe {self.max_change:.4f}, {self.source})"
        )


def probe_cadence(
    steps: Sequence[int], stated: int | None, stated_from: str = ""
) -> tuple[int | None, str]:
    """Every how many steps a probe comes.

    The cadence is the smallest gap between consecutive probe steps seen (`steps`, in order),
    never more than the cadence the preset states (`stated`, from `stated_from`). None when
    neither is known (fewer than two probes and none stated)."""
    gaps = [(b - a, a, b) for a, b in zip(steps, steps[1:], strict=False) if b > a]
    seen = min(gaps, default=None)
    if seen is not None and (stated is None or seen[0] < stated):
        return seen[0], f"the smallest gap between the probes seen (step {seen[1]} to {seen[2]})"
    if stated is not None:
        return stated, f"stated in the preset ({stated_from})"
    return None, "fewer than two probes seen and no eval_every in the preset"


def decision_lock(
    points: Sequence[tuple[int, float]],
    bounds: Sequence[tuple[float, float]],
    lower: bool,
    endpoint: int,
    every: int | None,
    max_change: float | None,
    source: str,
    every_from: str = "",
) -> Lock:
    """The decision lock: the probe from which no remaining probe can change the verdict.

    `points`: the read (delta or level) at each probe so far, in step order. `bounds`: (healthy,
    drift) of the raw rule and, with a scale amendment in force, of the scaled one. `every`: the
    probe cadence (None: unknown, and then no lock is claimed).

    The lock is the first probe from which, at every later probe, no value within the remaining
    probes (remaining_probes) x `max_change` gives any rule another label."""
    distances = _distances(points, bounds[0], lower)
    if every is not None and every <= 0:
        every = None
    locked: tuple[int | None, str | None] = (None, None)
    if max_change is not None and every is not None:
        locked = _locked_at(points, bounds, lower, endpoint, every, max_change)
    return Lock(*locked, max_change, source, distances, every, every_from)


def _distances(
    points: Sequence[tuple[int, float]], raw: tuple[float, float], lower: bool
) -> tuple[Distance, ...]:
    """How far each finite read is from the raw rule's (healthy, drift) bounds."""
    h0, d0 = raw
    return tuple(
        Distance(s, ahead(h0, x), ahead(d0, x))
        if lower
        else Distance(s, ahead(x, h0), ahead(x, d0))
        for s, x in points
        if math.isfinite(x)
    )


def _locked_at(
    points: Sequence[tuple[int, float]],
    bounds: Sequence[tuple[float, float]],
    lower: bool,
    endpoint: int,
    every: int,
    max_change: float,
) -> tuple[int | None, str | None]:
    """The probe from which every later read settles on one label, and that label.

    (None, None) where the last read has not settled: a read that is not a number, or one a
    remaining probe could move to another label, starts the count again."""
    locked: tuple[int | None, str | None] = (None, None)
    for step, x in points:
        label = None
        if math.isfinite(x):
            reach = remaining_probes(step, endpoint, every) * max_change
            label = _settled_label(x, reach, bounds, lower)
        if label is None:
            locked = (None, None)
        elif locked[1] != label:
            locked = (step, label)
    return locked


def _settled_label(
    x: float, reach: float, bounds: Sequence[tuple[float, float]], lower: bool
) -> str | None:
    """The label every read within `reach` of `x` gets, the rules combined.

    None where some rule (raw, or scaled) reads another label somewhere within reach."""
    labels: list[str] = []
    for h, d in bounds:
        lo, hi = read_rule(x - reach, h, d, lower), read_rule(x + reach, h, d, lower)
        if lo != hi:
            return None
        labels.append(lo)
    return labels[0] if len(labels) == 1 else combine(labels[0], labels[1])


def remaining_probes(step: int, endpoint: int, every: int) -> int:
    """How many probes may still come after `step` up to `endpoint`, at one every `every` steps.

    Rounded up: an endpoint off the cadence is probed too (every 40 to an endpoint of 300: from
    step 280, the probe at 300 is still to come), so the lock never counts fewer probes than
    remain."""
    return max(0, -(-(endpoint - step) // every))


def max_probe_change(
    spec: VerdictSpec, every: int | None, curves: Iterable[tuple[str, Sequence[tuple[int, float]]]]
) -> tuple[float | None, str]:
    """The largest change of the read from one probe to the next, and where it comes from.

    It is the preset's `verdict.max_probe_change`, else the largest step-to-step change among the
    banked comparators' curves (scaled to `every` steps, the probe cadence; None: unknown),
    naming the comparator and the steps."""
    if math.isfinite(spec.max_probe_change):
        return spec.max_probe_change, "stated in the preset (verdict.max_probe_change)"
    if every is None:
        return None, (
            "no verdict.max_probe_change in the preset, and no probe cadence to "
            "scale the banked comparators' curves to"
        )
    best = _largest_banked(curves, every)
    if best is None:
        return None, (
            "no verdict.max_probe_change in the preset and no banked comparator "
            "curve to take it from"
        )
    change, name, s0, s1 = best
    return change, f"the largest among the banked comparators: {name}, step {s0} to {s1}"


def _largest_banked(
    curves: Iterable[tuple[str, Sequence[tuple[int, float]]]], every: int
) -> tuple[float, str, int, int] | None:
    """The largest change of any banked curve per `every` steps, the first curve that has it.

    As (change, the curve's name, from step, to step); None where no curve has two finite
    points."""
    best: tuple[float, str, int, int] | None = None
    for name, points in curves:
        found = largest_change(points, every)
        if found is not None and (best is None or found[0] > best[0]):
            best = (found[0], name, found[1], found[2])
    return best


def largest_change(
    points: Sequence[tuple[int, float]], every: int | None
) -> tuple[float, int, int] | None:
    """The largest change between consecutive finite points: (change, from step, to step).

    A change is scaled to `every` steps (the probe cadence), or taken as it is when `every` is
    None; None when fewer than two points are finite."""
    pts = [(s, v) for s, v in points if math.isfinite(v)]
    best: tuple[float, int, int] | None = None
    for (s0, v0), (s1, v1) in zip(pts, pts[1:], strict=False):
        change = abs(v1 - v0) * (every / (s1 - s0) if every is not None else 1.0)
        if best is None or change > best[0]:
            best = (change, s0, s1)
    return best
