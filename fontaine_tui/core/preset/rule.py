"""A preset's `[verdict]`: the rule it states (metric, direction, read, bounds), validated.

It says which metric is read (a field or a dotted path), which way is better, as a delta or
a level, against which bounds (absolute, or a fraction of a banked comparator), the secondary
rules and how they combine, and the preset's words for the classes. The verdict wing's
`rules.py` reads a run with it."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from fontaine_tui.core.bank.store import BankedRun
from fontaine_tui.core.preset.checks import (
    LABELS,
    NUMBER,
    REQUIRED,
    ROUNDING,
    PresetError,
    Scalar,
    Spec,
    check_section,
    choice,
    positive,
    set_only,
)

VERDICT: Spec = {
    "metric": (str, "eval_chunk_mae"),
    "direction": (str, "lower"),  # which way is better: "lower" (an error) or "higher"
    "read": (str, "delta"),  # "delta": m(read) - m(anchor); "level": m(read) itself
    "anchor_step": (int, 0),  # required for a delta read
    "endpoint_step": (int, REQUIRED),
    # the bounds: healthy_max and drift_min when lower is better, healthy_min and drift_max
    # when higher is; absolute numbers, or the drift bound as drift_fraction x a comparator's
    # banked delta (`reference`)
    "healthy_max": (NUMBER, math.nan),
    "drift_min": (NUMBER, math.nan),
    "healthy_min": (NUMBER, math.nan),
    "drift_max": (NUMBER, math.nan),
    "reference": (str, ""),
    "drift_fraction": (NUMBER, math.nan),
    # the largest change one probe can bring, for the decision lock (default: taken from
    # the banked comparators' curves)
    "max_probe_change": (NUMBER, math.nan),
    # the rule's values, deltas and read stay hidden on every screen and in every notification
    # until the final read (core/verdict/blind.py)
    "blind": (bool, False),
    # the `group` of banked comparators that are seeds of one recipe: their spread is the
    # seed-noise floor a read and the bounds are held to (core/verdict/seednoise.py)
    "seed_group": (str, ""),
}
RULE_KEYS = (
    "metric",
    "direction",
    "read",
    "healthy_max",
    "drift_min",
    "healthy_min",
    "drift_max",
    "reference",
    "drift_fraction",
)
# a secondary rule: its own metric, direction, read and bounds, read at the primary's steps
SECONDARY: Spec = {"name": (str, REQUIRED), **{k: VERDICT[k] for k in RULE_KEYS}}
SECONDARY["metric"] = (str, REQUIRED)
VERDICT["combine"] = (str, "primary")  # "primary": the others corroborate; "all": must agree
COMBINES = ("primary", "all")
DIRECTIONS = ("lower", "higher")
READS = ("delta", "level")
# keys whose default stays out of the canonical form, so a preset written before they existed
# hashes as it did (its prereg.json still matches)
VERDICT_QUIET: dict[str, object] = {
    "direction": "lower",
    "read": "delta",
    "anchor_step": 0,
    "reference": "",
    "combine": "primary",
    "blind": False,
    "seed_group": "",
}
# a field, a dotted path into the eval record, or a foreign source's own key (eval/chunk_mae)
METRIC_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_/:@+-]*(\.[A-Za-z0-9_/:@+-]+)*")

# what a written starting preset holds where a bound goes (commands/inspect.py --preset-out):
# a string, never a number, so the preset reads no run until the bounds are chosen
PLACEHOLDER = "COMPLETE"
BOUNDS = ("healthy_max", "drift_min", "healthy_min", "drift_max")


@dataclass(frozen=True, slots=True)
class Comparator:
    name: str
    delta: float
    level_step: int
    eval_level: float
    train_level: float
    description: str
    bank: str = ""  # NAME@sha256 of the banked run it comes from ("" for a typed-in number)
    group: str = ""  # comparators of one group are drawn with their min-max envelope
    where: str = "typed into the preset"  # where its numbers come from, in words
    # the banked run as read when the preset was loaded (None: typed in, or not in this bank),
    # and its curve as the preset's rule reads it (metric_curve): the rules and charts read
    # them from here, never from the bank again
    entry: BankedRun | None = field(default=None, compare=False, repr=False)
    curve: tuple[tuple[int, float], ...] = field(default=(), compare=False, repr=False)


class _Directed:
    """Which way a rule's bounds point, for the rule classes below."""

    __slots__ = ()
    direction: str

    @property
    def lower_is_better(self) -> bool:
        return self.direction == "lower"

    @property
    def bound_keys(self) -> tuple[str, str]:
        """The preset keys of (healthy, drift) in this direction."""
        return (
            ("healthy_max", "drift_min") if self.lower_is_better else ("healthy_min", "drift_max")
        )


@dataclass(frozen=True, slots=True)
class RuleShape(_Directed):
    """A secondary rule (and the primary's shape while it is checked).

    It reads `metric` as a delta or a level and holds it to `healthy` and `drift` in its
    direction."""

    name: str
    metric: str
    direction: str
    read: str
    healthy: float
    drift: float
    reference: str = ""
    drift_fraction: float = math.nan


@dataclass(frozen=True, slots=True)
class VerdictSpec(_Directed):
    """The rule: read `metric` at the endpoint and hold it to two bounds.

    The metric is read as a delta from the anchor probe, or as a level. `healthy` and `drift` are
    the bounds in the preset's direction. With lower better, healthy if x <= healthy and drift if
    x >= drift. With higher better, healthy if x >= healthy and drift if x <= drift."""

    metric: str
    anchor_step: int
    endpoint_step: int
    healthy: float
    drift: float
    reference: str = ""
    drift_fraction: float = math.nan
    direction: str = "lower"
    read: str = "delta"
    secondary: tuple[RuleShape, ...] = ()  # each read at the same steps as the primary
    combine: str = "primary"  # "primary" decides alone, or "all" rules must agree
    max_probe_change: float = math.nan  # for the decision lock; NaN: from the bank
    # the [recipe]/[platform] keys that may differ from the banked comparator's (preset/delta.py);
    # None: not stated, no single-delta guard
    delta_keys: tuple[str, ...] | None = None
    blind: bool = False  # the read hidden until the final one (core/verdict/blind.py)
    seed_group: str = ""  # the comparators' group whose spread is the seed-noise floor


def check_placeholders(path: Path, table: object) -> None:
    """Refuse a [verdict] (or a secondary rule) whose bound is still a placeholder.

    The error says what to do, so a written preset never gives a verdict with bounds nobody
    chose."""
    if not isinstance(table, dict):
        return
    more = table.get("secondary")
    rules = [
        ("verdict", table),
        *(
            (f"verdict.secondary[{i}]", t)
            for i, t in enumerate(more if isinstance(more, list) else [])
        ),
    ]
    for where, rule in rules:
        for key in BOUNDS:
            value = rule.get(key) if isinstance(rule, dict) else None
            if isinstance(value, str) and value.startswith(PLACEHOLDER):
                raise PresetError(
                    path,
                    f"{where}.{key}",
                    f"{value!r} is a placeholder: complete the [verdict] bounds "
                    "(numbers chosen before reading the run)",
                )


def check_labels(path: Path, table: object) -> dict[str, str]:
    """Check [labels], the preset's own word for each verdict class it renames.

    Exit codes and verdict.json's `verdict` stay the class; what the reader sees is the label."""
    if not isinstance(table, dict):
        raise PresetError(path, "labels", "expected a table")
    out: dict[str, str] = {}
    for key, value in table.items():
        out[key] = _label(path, key, value)
    texts = [*out.values(), *(c for c in LABELS if c not in out)]
    dup = next((t for t in texts if texts.count(t) > 1), None)
    if dup is not None:
        raise PresetError(path, "labels", f"expected each label once, got {dup!r} twice")
    return out


def _label(path: Path, key: object, value: object) -> str:
    """One [labels] entry: a known class's word, one line, and no other class's name."""
    if key not in LABELS:
        raise PresetError(
            path, f"labels.{key}", f"unknown class (expected one of: {', '.join(LABELS)})"
        )
    if not isinstance(value, str) or not value.strip() or value != " ".join(value.split()):
        raise PresetError(path, f"labels.{key}", "expected a non-empty one-line label")
    if value in LABELS and value != key:  # a reader would take it for that class
        raise PresetError(
            path,
            f"labels.{key}",
            f"expected a label that is no other class's name, got {value}",
        )
    return value


def verdict_spec(
    path: Path,
    f: Mapping[str, Scalar],
    comparators: Mapping[str, Comparator],
    every: int,
    steps: int,
    secondary: object,
) -> VerdictSpec:
    """Hold [verdict] to its rules.

    The metric must be a field path, the direction and read known, the bounds those of that
    direction (and no others) in order, the probe steps on the eval grid. Each
    [[verdict.secondary]] rule is checked too, read at the same steps."""
    shape = _rule_shape(path, "verdict", f, comparators)
    anchor, endpoint = _probe_steps(path, f, shape.read, every, steps)
    choice(path, "verdict.combine", f["combine"], COMBINES)
    rules = _secondary_rules(path, secondary, comparators, anchor)
    change = float(f["max_probe_change"])
    if math.isfinite(change) and change <= 0:
        raise PresetError(
            path, "verdict.max_probe_change", f"expected a positive number, got {change}"
        )
    return VerdictSpec(
        shape.metric,
        anchor,
        endpoint,
        shape.healthy,
        shape.drift,
        shape.reference,
        shape.drift_fraction,
        shape.direction,
        shape.read,
        rules,
        str(f["combine"]),
        change,
        blind=bool(f["blind"]),
        seed_group=str(f["seed_group"]),
    )


def _probe_steps(
    path: Path, f: Mapping[str, Scalar], read: str, every: int, steps: int
) -> tuple[int, int]:
    """The rule's (anchor, endpoint): probe steps in order, the endpoint within the recipe.

    A delta read needs a positive anchor."""
    anchor, endpoint = int(f["anchor_step"]), int(f["endpoint_step"])
    if read == "delta":
        positive(path, "verdict.anchor_step", anchor)
    if endpoint <= anchor:
        raise PresetError(
            path,
            "verdict.endpoint_step",
            f"expected a step after anchor_step {anchor}, got {endpoint}",
        )
    if endpoint > steps:
        raise PresetError(
            path,
            "verdict.endpoint_step",
            f"expected at most recipe.steps = {steps}, got {endpoint}",
        )
    for key, step in (("anchor_step", anchor), ("endpoint_step", endpoint)):
        if step % every:
            raise PresetError(
                path,
                f"verdict.{key}",
                f"expected a multiple of recipe.eval_every = {every} (a probe step), got {step}",
            )
    return anchor, endpoint


def _secondary_rules(
    path: Path, secondary: object, comparators: Mapping[str, Comparator], anchor: int
) -> tuple[RuleShape, ...]:
    """The [[verdict.secondary]] rules, each uniquely named and read at the primary's steps."""
    if not isinstance(secondary, list):
        raise PresetError(
            path, "verdict.secondary", "expected an array of [[verdict.secondary]] tables"
        )
    rules: list[RuleShape] = []
    for i, body in enumerate(secondary):
        where = f"verdict.secondary[{i}]"
        fields = check_section(path, where, body, SECONDARY)
        rule = _rule_shape(path, where, fields, comparators, str(fields["name"]))
        if not rule.name or rule.name in {r.name for r in rules} | {"raw", "scaled"}:
            raise PresetError(
                path,
                f"{where}.name",
                f"expected a unique name (not raw or scaled), got {rule.name!r}",
            )
        if rule.read == "delta" and not anchor:
            raise PresetError(
                path, f"{where}.read", 'a delta read needs verdict.anchor_step; expected "level"'
            )
        rules.append(rule)
    return tuple(rules)


def _rule_shape(
    path: Path,
    where: str,
    f: Mapping[str, Scalar],
    comparators: Mapping[str, Comparator],
    name: str = "",
) -> RuleShape:
    """One rule's metric, direction, read and bounds, held to their rules."""
    metric, direction, read = str(f["metric"]), str(f["direction"]), str(f["read"])
    if not METRIC_PATH.fullmatch(metric):
        raise PresetError(
            path,
            f"{where}.metric",
            f"expected a field of the eval record or a dotted path into it "
            f"(like eval_chunk_mae or breakdown.rig), or a source's key (like "
            f"eval/chunk_mae), got {metric!r}",
        )
    choice(path, f"{where}.direction", direction, DIRECTIONS)
    choice(path, f"{where}.read", read, READS)
    healthy, drift, keys = _bounds(path, where, f, direction)
    ref, fraction = str(f["reference"]), float(f["drift_fraction"])
    if ref and ref not in comparators:
        raise PresetError(
            path, f"{where}.reference", f"expected the name of a [comparators.*] table, got {ref!r}"
        )
    if math.isfinite(fraction):
        _check_fraction(path, where, ref, fraction, comparators, (keys[1], drift))
    return RuleShape(name, metric, direction, read, healthy, drift, ref, fraction)


def _bounds(
    path: Path, where: str, f: Mapping[str, Scalar], direction: str
) -> tuple[float, float, tuple[str, str]]:
    """The rule's (healthy, drift) bounds and their keys, in the order of its direction.

    Only that direction's two bounds are written, both, and healthy on the better side."""
    lower = direction == "lower"
    keys = ("healthy_max", "drift_min") if lower else ("healthy_min", "drift_max")
    others = ("healthy_min", "drift_max") if lower else ("healthy_max", "drift_min")
    for key in others:
        if math.isfinite(float(f[key])):
            raise PresetError(
                path,
                f"{where}.{key}",
                f"not a bound when {direction} is better (expected {' and '.join(keys)})",
            )
    for key in keys:
        if not math.isfinite(float(f[key])):
            raise PresetError(
                path,
                f"{where}.{key}",
                f"missing; expected a number (with {direction} better, the "
                f"bounds are {' and '.join(keys)})",
            )
    healthy, drift = float(f[keys[0]]), float(f[keys[1]])
    if (healthy >= drift) if lower else (healthy <= drift):
        raise PresetError(
            path,
            f"{where}.{keys[0]}",
            f"expected a healthy bound {'below' if lower else 'above'} "
            f"{keys[1]} {drift}, got {healthy}",
        )
    return healthy, drift, keys


def _check_fraction(
    path: Path,
    where: str,
    ref: str,
    fraction: float,
    comparators: Mapping[str, Comparator],
    drift: tuple[str, float],
) -> None:
    """Hold a drift_fraction to its comparator: named, in (0, 1], and giving the drift bound.

    `drift`: the drift bound's key and value as written."""
    if not ref:
        raise PresetError(
            path,
            f"{where}.reference",
            "missing; drift_fraction is a fraction of a comparator's delta: "
            "expected the comparator's name",
        )
    if not 0 < fraction <= 1:
        raise PresetError(
            path, f"{where}.drift_fraction", f"expected a fraction in (0, 1], got {fraction}"
        )
    implied = fraction * comparators[ref].delta
    if abs(implied - drift[1]) > ROUNDING:
        raise PresetError(
            path,
            f"{where}.{drift[0]}",
            f"expected drift_fraction x comparators.{ref}.delta = "
            f"{fraction} x {comparators[ref].delta} = {implied:.5f} "
            f"(to 4 decimals), got {drift[1]}",
        )


def verdict_canonical(fields: Mapping[str, Scalar], spec: VerdictSpec) -> dict[str, object]:
    """[verdict] as hashed, with the defaults of newer keys left out.

    Keys newer than the first presets are left out at their defaults, so a preset written before
    them hashes as it did (its prereg.json still matches)."""
    out: dict[str, object] = {
        k: v for k, v in set_only(fields).items() if k not in VERDICT_QUIET or v != VERDICT_QUIET[k]
    }
    if spec.secondary:
        out["secondary"] = [
            set_only(
                {
                    "name": r.name,
                    "metric": r.metric,
                    "direction": r.direction,
                    "read": r.read,
                    r.bound_keys[0]: r.healthy,
                    r.bound_keys[1]: r.drift,
                    **({"reference": r.reference} if r.reference else {}),
                    "drift_fraction": r.drift_fraction,
                }
            )
            for r in spec.secondary
        ]
    if spec.delta_keys is not None:  # hashed only when stated: older presets keep their sha256
        out["delta_keys"] = list(spec.delta_keys)
    return out
