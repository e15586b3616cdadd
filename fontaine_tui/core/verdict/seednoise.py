"""The seed-noise floor: how far seeds of one recipe spread at a read step, and what lies inside.

A preset names a group of banked comparators as seeds of one recipe (`[verdict] seed_group`).
At the step the rule reads, each seed's delta (or level) is read from its banked curve as the
rule reads this run. With n >= 2 seeds measured there the floor is said as their mean ± half
their range, (max - min) / 2, with the range itself; the sample sd is given beside it from 3
seeds on. The decisions use the range, the spread the seeds showed, with no distribution
assumed: a read, or a bound, lies inside the noise when min <= x <= max. (Mean ± half-range is
the same band for 2 seeds; from 3 on, a seed could fall outside it, outside its own noise, so
the range decides.) It is information beside the verdict and never changes its label."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from fontaine_tui.core.preset.checks import HEALTHY, SAME_DRIFT
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.preset.rule import Comparator, VerdictSpec
from fontaine_tui.core.preset.seeds import members, run_seed

STATISTIC = "the seeds' range (min..max)"  # what the inside/outside decisions use


@dataclass(frozen=True, slots=True)
class Seed:
    """One seed of the group at the read step: its read there, or why there is none."""

    name: str
    bank: str
    seed: int | None  # the run's recipe seed, from its banked meta record
    value: float | None
    why: str = ""  # why `value` is None

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "bank": self.bank,
            "seed": self.seed,
            "value": self.value,
            **({"why": self.why} if self.why else {}),
        }


@dataclass(frozen=True, slots=True)
class BoundCheck:
    """One bound of a rule held to the floor: the stated number, and the rule's class it bounds."""

    key: str  # "verdict.healthy_max"
    value: float
    cls: str  # HEALTHY or SAME-DRIFT
    rule: str = "raw"  # "raw", or "scaled" (the bound x s)
    factor: float = 1.0


@dataclass(frozen=True, slots=True)
class SeedNoise:
    """The floor of `group` at `step`, and this run's read `x` (None: no read) against it."""

    group: str
    step: int | None
    read: str  # "delta" or "level"
    seeds: tuple[Seed, ...]
    x: float | None = None
    # a line for each of the rule's bounds inside the floor (bound_lines), as read
    bounds_inside: tuple[str, ...] = ()

    @property
    def values(self) -> list[float]:
        return [s.value for s in self.seeds if s.value is not None]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.values) if self.n >= 2 else None

    @property
    def half_range(self) -> float | None:
        v = self.values
        return (max(v) - min(v)) / 2 if self.n >= 2 else None

    @property
    def sd(self) -> float | None:
        return statistics.stdev(self.values) if self.n >= 3 else None

    @property
    def low(self) -> float | None:
        return min(self.values) if self.n >= 2 else None

    @property
    def high(self) -> float | None:
        return max(self.values) if self.n >= 2 else None

    def inside(self, x: float) -> bool | None:
        """Whether `x` lies within the seeds' range (None without a floor)."""
        if self.low is None or self.high is None:
            return None
        return self.low <= x <= self.high

    @property
    def outside(self) -> bool | None:
        """Whether this run's read lies outside the floor (None: no read, or no floor)."""
        inside = self.inside(self.x) if self.x is not None else None
        return None if inside is None else not inside

    def floor(self) -> str:
        """The floor in words: "0.12 ± 0.41 at step 1000, 3 seeds: range -0.29..0.53"."""
        return (
            f"{_n(self.mean)} ± {_n(self.half_range)} at step {self.step}, {self.n} seeds: "
            f"range {self.spread()}"
        )

    def spread(self) -> str:
        return f"{_n(self.low)}..{_n(self.high)}"

    def why_none(self) -> str:
        """Why there is no floor, in words ("" when there is one)."""
        if self.n >= 2:
            return ""
        lacking = [f"{s.name} {s.why}" for s in self.seeds if s.value is None]
        at = f" at step {self.step}" if self.step is not None else ""
        return f"no seed-noise floor{at}: need ≥ 2 seeds of {self.group}, {self.n} measured" + (
            f" ({'; '.join(lacking)})" if lacking else ""
        )

    def line(self) -> str:
        """Where this run's read lies against the floor, one line."""
        if none := self.why_none():
            return none
        noise = f"seed noise of {self.group} ({self.floor()})"
        if self.x is None:
            return f"{noise}: no read to hold to it"
        said = f"{self.read} {_n(self.x)}"
        if self.outside:
            return f"{said} is outside the {noise}"
        return f"{said} is inside the {noise}: the rule cannot tell this read from seed noise"

    def detail(self) -> str:
        """Each seed's read, the sd, and which statistic decides."""
        each = ", ".join(
            f"{s.name}{'' if s.seed is None else f' (seed {s.seed})'} "
            + (_n(s.value) if s.value is not None else s.why)
            for s in self.seeds
        )
        sd = f"; sd {_n(self.sd)}" if self.sd is not None else ""
        return f"seeds: {each}{sd}; inside/outside by {STATISTIC}; the verdict is the rule's"

    def bound_lines(self, bounds: Sequence[BoundCheck], labels: Mapping[str, str]) -> list[str]:
        """A line for each bound inside the floor: the rule cannot tell its class from noise."""
        out = []
        for b in bounds:
            value = b.value * b.factor
            if not self.inside(value):
                continue
            said = f"{b.key} {b.value:g}" + (
                f" x {b.factor:.3f} = {_n(value)} (scale-adjusted)" if b.rule == "scaled" else ""
            )
            rule = "the scale-adjusted rule" if b.rule == "scaled" else "this rule"
            out.append(
                f"{said} is inside the seed noise of {self.group} (±{_n(self.half_range)} "
                f"around {_n(self.mean)}, range {self.spread()} at step {self.step}, {self.n} "
                f"seeds): {rule} cannot tell {labels.get(b.cls, b.cls)} from noise"
            )
        return out

    def to_json(self) -> dict:
        return {
            "group": self.group,
            "step": self.step,
            "read": self.read,
            "seeds": [s.to_json() for s in self.seeds],
            "n": self.n,
            "mean": self.mean,
            "half_range": self.half_range,
            "sd": self.sd,
            "low": self.low,
            "high": self.high,
            "decided_by": STATISTIC,
            "value": self.x,
            "outside": self.outside,
            "text": self.line(),
            "bounds_inside": list(self.bounds_inside),
        }


def seed_noise(
    preset: Preset, step: int | None, x: float | None = None, factor: float | None = None
) -> SeedNoise | None:
    """The floor of the preset's seed group at `step`, with the read `x`; None without a group.

    `factor`: the scale in force (the scale-adjusted rule's bounds are the raw ones x it)."""
    spec = preset.verdict
    if not spec.seed_group:
        return None
    seeds = [
        Seed(c.name, c.bank, run_seed(c.entry), *_seed_read(c, step, spec))
        for c in members(spec.seed_group, preset.comparators)
    ]
    finite = x if x is not None and math.isfinite(x) else None
    noise = SeedNoise(spec.seed_group, step, spec.read, tuple(seeds), finite)
    inside = noise.bound_lines(rule_bounds(preset, factor), preset.labels)
    return replace(noise, bounds_inside=tuple(inside))


def _seed_read(c: Comparator, step: int | None, spec: VerdictSpec) -> tuple[float | None, str]:
    """A seed run's read at `step`, or why it has none: (value, "") or (None, why)."""
    if step is None:
        return None, "(no read step yet)"
    if c.entry is None:
        return None, "(its bank entry is not here)"
    v = dict(c.curve).get(step)
    if v is None or not math.isfinite(v):
        return None, f"(no {spec.metric} {spec.read} at step {step})"
    return v, ""


def rule_bounds(preset: Preset, factor: float | None = None) -> list[BoundCheck]:
    """The primary rule's two bounds, raw, and x `factor` for the scale-adjusted rule if given."""
    spec = preset.verdict
    healthy, drift = spec.bound_keys
    raw = [
        BoundCheck(f"verdict.{healthy}", spec.healthy, HEALTHY),
        BoundCheck(f"verdict.{drift}", spec.drift, SAME_DRIFT),
    ]
    if factor is None:
        return raw
    scaled = [BoundCheck(b.key, b.value, b.cls, "scaled", factor) for b in raw]
    return raw + scaled


def _n(x: float | None) -> str:
    """A computed number in a line: 4 significant digits."""
    return "—" if x is None else f"{x:.4g}"
