"""Presets: a pre-registration as strictly validated TOML, with a canonical form and its hash."""

from __future__ import annotations

import enum
import hashlib
import json
import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, TypedDict, TypeVar, cast

from fontaine_tui.core.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# the verdict's classes (rules.py computes them; a preset's [exit_codes] keys name them)
HEALTHY = "HEALTHY"
SAME_DRIFT = "SAME-DRIFT"
AMBIGUOUS = "AMBIGUOUS"
BY_INSTRUMENT = "AMBIGUOUS-BY-INSTRUMENT"
UNDECIDABLE = "UNDECIDABLE"
LABELS = (HEALTHY, SAME_DRIFT, AMBIGUOUS, BY_INSTRUMENT, UNDECIDABLE)
ROUNDING = 0.5e-4 + 1e-12  # bounds are written to 4 decimals


class _Required(enum.Enum):
    REQUIRED = "required"


REQUIRED: Final = _Required.REQUIRED  # a sentinel mypy can narrow away (`default is REQUIRED`)


class PresetError(InputError):
    """A preset that cannot be used; str() is one line naming the file and the key."""

    def __init__(self, path: str | Path, key: str, expected: str) -> None:
        self.path, self.key, self.expected = str(path), key, expected
        super().__init__(f"{path}: {key}: {expected}")


# A checked value: what a TOML (or canonical JSON) scalar becomes once held to its spec row.
Scalar = str | int | float | bool
# One row per key: (type, default). REQUIRED has no default.
Spec = dict[str, tuple[type | tuple[type, ...], Scalar | _Required]]
NUMBER = (int, float)
INT_MAX = 1 << 53  # steps, sizes, seeds: exact in a float, far past any run

RUN: Spec = {"name": (str, REQUIRED), "output_dir": (str, REQUIRED), "question": (str, "")}
RECIPE: Spec = {
    "model_size": (str, REQUIRED),
    "batch_size": (int, REQUIRED),
    "backward_chunks": (int, 1),
    "seed": (int, 0),
    "image_augment": (NUMBER, 0.0),
    "recompute_stats": (bool, False),
    "objective": (str, "joint"),
    "insulate_flow": (bool, False),
    "flow_decoder_init": (str, "inherit"),
    "init": (str, ""),
    "lr": (NUMBER, 3e-4),
    "warmup_steps": (int, 0),
    "steps": (int, REQUIRED),
    "eval_every": (int, REQUIRED),
    "eval_dataset_breakdown": (bool, False),
    "save_every": (int, REQUIRED),
    "chunk_grad_allreduce": (bool, False),
}
PLATFORM: Spec = {
    "nproc": (int, 1),
    "device": (str, "auto"),
    "num_workers": (int, 2),
    "prefetch_factor": (int, 2),
    "data_dir": (str, ""),
}
VERDICT: Spec = {
    "metric": (str, "eval_chunk_mae"),
    "direction": (str, "lower"),    # which way is better: "lower" (an error) or "higher"
    "read": (str, "delta"),         # "delta": m(read) - m(anchor); "level": m(read) itself
    "anchor_step": (int, 0),        # required for a delta read
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
}
RULE_KEYS = ("metric", "direction", "read", "healthy_max", "drift_min", "healthy_min",
             "drift_max", "reference", "drift_fraction")
# a secondary rule: its own metric, direction, read and bounds, read at the primary's steps
SECONDARY: Spec = {"name": (str, REQUIRED), **{k: VERDICT[k] for k in RULE_KEYS}}
SECONDARY["metric"] = (str, REQUIRED)
VERDICT["combine"] = (str, "primary")  # "primary": the others corroborate; "all": must agree
COMBINES = ("primary", "all")
DIRECTIONS = ("lower", "higher")
READS = ("delta", "level")
# keys whose default stays out of the canonical form, so a preset written before they existed
# hashes as it did (its prereg.json still matches)
VERDICT_QUIET: dict[str, object] = {"direction": "lower", "read": "delta", "anchor_step": 0,
                                    "reference": "", "combine": "primary"}
METRIC_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*")
COMPARATOR: Spec = {
    "delta": (NUMBER, REQUIRED),
    "level_step": (int, 0),
    "eval_level": (NUMBER, math.nan),
    "train_level": (NUMBER, math.nan),
    "description": (str, ""),
}
AMENDMENT: Spec = {
    "id": (int, REQUIRED),
    "kind": (str, REQUIRED),
    "from_step": (int, 0),
    "comparator": (str, ""),
    "factor": (NUMBER, math.nan),
    "declared_after_step": (int, 0),
    "declared_before_step": (int, REQUIRED),
    "text": (str, ""),
    "to_step": (int, 0),  # extend: the new endpoint
}
AMENDMENT_KINDS = ("scale", "extend")
GATES: Spec = {
    "gpu_hours": (NUMBER, math.inf),
    "step_s_estimate_min": (NUMBER, math.nan),
    "step_s_estimate_max": (NUMBER, math.nan),
    "step_s_estimate_hardware": (str, ""),
    "starvation_data_frac": (NUMBER, 0.25),
    "gpu_util_min": (NUMBER, 60.0),
    "ram_warn_frac": (NUMBER, 0.10),
    "ram_alert_frac": (NUMBER, 0.05),
    "gpu_hours_warn_frac": (NUMBER, 0.80),
    "stall_factor": (NUMBER, 3.0),
    "stall_min_s": (NUMBER, 60.0),
}


# recipe and platform key by key, as _check_section leaves them (NUMBER -> float); the
# Preset keeps them as mappings. The other sections become dataclasses (`_made`).
class RecipeFields(TypedDict):
    model_size: str
    batch_size: int
    backward_chunks: int
    seed: int
    image_augment: float
    recompute_stats: bool
    objective: str
    insulate_flow: bool
    flow_decoder_init: str
    init: str
    lr: float
    warmup_steps: int
    steps: int
    eval_every: int
    eval_dataset_breakdown: bool
    save_every: int
    chunk_grad_allreduce: bool


class PlatformFields(TypedDict):
    nproc: int
    device: str
    num_workers: int
    prefetch_factor: int
    data_dir: str


SECTIONS = ("run", "recipe", "platform", "verdict", "comparators", "amendments", "gates",
            "labels", "interpretation")
MODEL_SIZES = ("tiny", "small", "base")
OBJECTIVES = ("joint", "ar", "flow")
DEVICES = ("auto", "cpu", "cuda")
INITS = ("inherit", "random")


@dataclass(frozen=True, slots=True)
class Comparator:
    name: str
    delta: float
    level_step: int
    eval_level: float
    train_level: float
    description: str


@dataclass(frozen=True, slots=True)
class Amendment:
    """A declared change to how the run is read. `declared_after_step` is the last step seen."""

    id: int
    kind: str
    from_step: int
    comparator: str
    factor: float
    declared_after_step: int
    declared_before_step: int
    text: str
    declared_at: str = ""
    source: str = "preset"
    to_step: int = 0  # kind "extend": the endpoint it moves the read to


@dataclass(frozen=True, slots=True)
class RuleShape:
    """A secondary rule (and the primary's shape while it is checked): read `metric` as a
    delta or a level, hold it to `healthy` and `drift` in its direction."""

    name: str
    metric: str
    direction: str
    read: str
    healthy: float
    drift: float
    reference: str = ""
    drift_fraction: float = math.nan

    @property
    def lower_is_better(self) -> bool:
        return self.direction == "lower"

    @property
    def bound_keys(self) -> tuple[str, str]:
        return ("healthy_max", "drift_min") if self.lower_is_better else ("healthy_min",
                                                                           "drift_max")


@dataclass(frozen=True, slots=True)
class VerdictSpec:
    """The rule: read `metric` at the endpoint (as a delta from the anchor probe, or as a
    level) and hold it to two bounds. `healthy` and `drift` are the bounds in the preset's
    direction: with lower better, healthy if x <= healthy and drift if x >= drift; with higher
    better, healthy if x >= healthy and drift if x <= drift."""

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

    @property
    def lower_is_better(self) -> bool:
        return self.direction == "lower"

    @property
    def bound_keys(self) -> tuple[str, str]:
        """The preset keys of (healthy, drift) in this direction."""
        return ("healthy_max", "drift_min") if self.lower_is_better else ("healthy_min",
                                                                           "drift_max")


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    path: str
    run: Mapping[str, Scalar]
    recipe: Mapping[str, Scalar]
    platform: Mapping[str, Scalar]
    verdict: VerdictSpec
    comparators: Mapping[str, Comparator]
    amendments: tuple[Amendment, ...]
    gates: Mapping[str, float | str]
    interpretation: Mapping[str, str]  # by class (HEALTHY, ...), whatever the labels
    canonical: Mapping[str, object]
    sha256: str
    labels: Mapping[str, str] = field(default_factory=dict)  # class -> the preset's word

    def label(self, cls: str) -> str:
        """The preset's word for a verdict class (the class itself by default)."""
        return self.labels.get(cls, cls)

    @property
    def run_name(self) -> str:
        return str(self.run["name"])

    @property
    def reference(self) -> Comparator | None:
        """The comparator the drift bound is a fraction of, if the preset names one."""
        return self.comparators.get(self.verdict.reference) if self.verdict.reference else None

    def canonical_json(self) -> bytes:
        return canonical_bytes(self.canonical)


def _type_name(t: type | tuple[type, ...]) -> str:
    if t is NUMBER:
        return "a number"
    names: dict[type | tuple[type, ...], str] = {
        str: "a string", int: "an integer", bool: "true or false"}
    return names.get(t, str(t))


def _check_section(path: Path, where: str, table: object, spec: Spec) -> dict[str, Scalar]:
    if not isinstance(table, dict):
        raise PresetError(path, where, "expected a table")
    for key in table:
        if key not in spec:
            raise PresetError(path, f"{where}.{key}",
                              f"unknown key (expected one of: {', '.join(spec)})")
    out: dict[str, Scalar] = {}
    for key, (typ, default) in spec.items():
        if key not in table:
            if default is REQUIRED:
                raise PresetError(path, f"{where}.{key}", f"missing; expected {_type_name(typ)}")
            out[key] = default
            continue
        value = table[key]
        ok = isinstance(value, typ) and not (isinstance(value, bool) and typ is not bool)
        if not ok:
            raise PresetError(path, f"{where}.{key}",
                              f"expected {_type_name(typ)}, got {json.dumps(value, default=str)}")
        if typ is NUMBER:
            try:
                value = float(value)
            except OverflowError:
                value = math.inf
            if not math.isfinite(value):
                raise PresetError(path, f"{where}.{key}", f"expected a finite number, got {value}")
            if where == "gates" and value < 0:
                raise PresetError(path, f"{where}.{key}",
                                  f"expected a number >= 0 (a limit or a duration), got {value:g}")
        elif typ is int and not 0 <= value <= INT_MAX:
            raise PresetError(path, f"{where}.{key}",
                              f"expected an integer in [0, {INT_MAX}], got {value}")
        out[key] = value
    return out


def _choice(path: Path, key: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise PresetError(path, key, f"expected one of {', '.join(choices)}, got {value!r}")


def _positive(path: Path, key: str, value: int, minimum: int = 1) -> None:
    if value < minimum:
        raise PresetError(path, key, f"expected an integer >= {minimum}, got {value}")


def _set_only(table: Mapping[str, object]) -> dict[str, object]:
    """Drop unset numbers (NaN, infinity) so the canonical form is strict JSON."""
    return {k: v for k, v in table.items() if not (isinstance(v, float) and not math.isfinite(v))}


def gate_of(gates: Mapping[str, object], key: str) -> float | None:
    """A [gates] number, or None where it is not a finite one (an unset inf/nan default)."""
    value = gates.get(key)
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def canonical_bytes(data: Mapping[str, object]) -> bytes:
    """Sorted keys, no spaces, floats as Python writes them: the form that is hashed."""
    return json.dumps(dict(data), sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def _validate(path: Path, doc: dict) -> Preset:
    for key in doc:
        if key not in SECTIONS:
            raise PresetError(path, key, f"unknown section (expected one of: {', '.join(SECTIONS)})")
    for key in ("run", "recipe", "platform", "verdict"):
        if key not in doc:
            raise PresetError(path, key, "missing section")
    run = _check_section(path, "run", doc["run"], RUN)
    recipe = _check_section(path, "recipe", doc["recipe"], RECIPE)
    platform = _check_section(path, "platform", doc["platform"], PLATFORM)
    verdict_table = doc["verdict"]
    if not isinstance(verdict_table, dict):
        raise PresetError(path, "verdict", "expected a table")
    secondary = verdict_table.get("secondary", [])
    verdict_fields = _check_section(path, "verdict",
                                    {k: v for k, v in verdict_table.items() if k != "secondary"},
                                    VERDICT)
    gates = _check_section(path, "gates", doc.get("gates", {}), GATES)
    # The same tables key by key: _check_section held each value to its spec row, which
    # mypy cannot follow from the Spec tables themselves.
    rec, plat = cast(RecipeFields, recipe), cast(PlatformFields, platform)

    if not run["name"]:
        raise PresetError(path, "run.name", "expected a non-empty string")
    _choice(path, "recipe.model_size", rec["model_size"], MODEL_SIZES)
    _choice(path, "recipe.objective", rec["objective"], OBJECTIVES)
    _choice(path, "recipe.flow_decoder_init", rec["flow_decoder_init"], INITS)
    _choice(path, "platform.device", plat["device"], DEVICES)
    for knob in ("batch_size", "backward_chunks", "steps", "eval_every", "save_every"):
        _positive(path, f"recipe.{knob}", rec[knob])
    _positive(path, "platform.nproc", plat["nproc"])
    _positive(path, "platform.num_workers", plat["num_workers"], 0)
    _positive(path, "platform.prefetch_factor", plat["prefetch_factor"])
    if not 0.0 <= rec["image_augment"] <= 1.0:
        raise PresetError(path, "recipe.image_augment",
                          f"expected a probability in [0, 1], got {rec['image_augment']}")
    if rec["lr"] <= 0:
        raise PresetError(path, "recipe.lr", f"expected a positive number, got {rec['lr']}")
    shard = rec["backward_chunks"] * plat["nproc"]
    if rec["batch_size"] % shard:
        raise PresetError(path, "recipe.batch_size",
                          f"expected a multiple of backward_chunks x platform.nproc = {shard}, "
                          f"got {rec['batch_size']}")

    every = rec["eval_every"]
    comparators = _comparators(path, doc.get("comparators", {}), every)
    verdict = _verdict_spec(path, verdict_fields, comparators, every, rec["steps"], secondary)

    amendments = _amendments(path, doc.get("amendments", []), comparators, verdict, every)

    labels = _labels(path, doc.get("labels", {}))
    by_label = {text: cls for cls, text in labels.items()}
    interp = doc.get("interpretation", {})
    if not isinstance(interp, dict):
        raise PresetError(path, "interpretation", "expected a table")
    interpretation: dict[str, str] = {}
    for key, value in interp.items():
        cls = by_label.get(key, key if key not in by_label.values() else "")
        if cls not in LABELS:
            names = [labels.get(c, c) for c in LABELS]
            raise PresetError(path, f"interpretation.{key}",
                              f"unknown key (expected one of: {', '.join(names)})")
        if not isinstance(value, str):
            raise PresetError(path, f"interpretation.{key}", "expected a string")
        interpretation[cls] = " ".join(value.split())

    canonical = {
        "run": run,
        "recipe": recipe,
        "platform": platform,
        "verdict": _verdict_canonical(verdict_fields, verdict),
        "comparators": {
            n: _set_only({k: getattr(c, k) for k in COMPARATOR})
            for n, c in sorted(comparators.items())
        },
        "amendments": [_set_only({k: getattr(a, k) for k in AMENDMENT
                                  if k != "to_step" or a.to_step}) for a in amendments],
        "gates": _set_only(gates),
        "interpretation": interpretation,
        **({"labels": labels} if labels else {}),
    }
    digest = hashlib.sha256(canonical_bytes(canonical)).hexdigest()
    freeze = MappingProxyType
    return Preset(
        name=path.stem,
        path=str(path),
        run=freeze(run),
        recipe=freeze(recipe),
        platform=freeze(platform),
        verdict=verdict,
        comparators=freeze(comparators),
        amendments=amendments,
        gates=freeze(gates),
        interpretation=freeze(interpretation),
        labels=freeze(labels),
        canonical=freeze(canonical),
        sha256=digest,
    )


def _labels(path: Path, table: object) -> dict[str, str]:
    """[labels]: the preset's own word for each verdict class it renames (exit codes and
    verdict.json's `verdict` stay the class; what the reader sees is the label)."""
    if not isinstance(table, dict):
        raise PresetError(path, "labels", "expected a table")
    out: dict[str, str] = {}
    for key, value in table.items():
        if key not in LABELS:
            raise PresetError(path, f"labels.{key}",
                              f"unknown class (expected one of: {', '.join(LABELS)})")
        if not isinstance(value, str) or not value.strip() or value != " ".join(value.split()):
            raise PresetError(path, f"labels.{key}", "expected a non-empty one-line label")
        out[key] = value
    texts = [*out.values(), *(c for c in LABELS if c not in out)]
    dup = next((t for t in texts if texts.count(t) > 1), None)
    if dup is not None:
        raise PresetError(path, "labels", f"expected each label once, got {dup!r} twice")
    return out


def _verdict_spec(path: Path, f: Mapping[str, Scalar], comparators: Mapping[str, Comparator],
                  every: int, steps: int, secondary: object) -> VerdictSpec:
    """[verdict] held to its rules: the metric a field path, the direction and read known, the
    bounds of that direction (and no others) in order, the probe steps on the eval grid; and
    each [[verdict.secondary]] rule, read at the same steps."""
    shape = _rule_shape(path, "verdict", f, comparators)
    anchor, endpoint = int(f["anchor_step"]), int(f["endpoint_step"])
    if shape.read == "delta":
        _positive(path, "verdict.anchor_step", anchor)
    if endpoint <= anchor:
        raise PresetError(path, "verdict.endpoint_step",
                          f"expected a step after anchor_step {anchor}, got {endpoint}")
    if endpoint > steps:
        raise PresetError(path, "verdict.endpoint_step",
                          f"expected at most recipe.steps = {steps}, got {endpoint}")
    for key, step in (("anchor_step", anchor), ("endpoint_step", endpoint)):
        if step % every:
            raise PresetError(path, f"verdict.{key}",
                              f"expected a multiple of recipe.eval_every = {every} (a probe step), "
                              f"got {step}")
    _choice(path, "verdict.combine", f["combine"], COMBINES)
    if not isinstance(secondary, list):
        raise PresetError(path, "verdict.secondary",
                          "expected an array of [[verdict.secondary]] tables")
    rules: list[RuleShape] = []
    for i, body in enumerate(secondary):
        where = f"verdict.secondary[{i}]"
        fields = _check_section(path, where, body, SECONDARY)
        rule = _rule_shape(path, where, fields, comparators, str(fields["name"]))
        if not rule.name or rule.name in {r.name for r in rules} | {"raw", "scaled"}:
            raise PresetError(path, f"{where}.name",
                              f"expected a unique name (not raw or scaled), got {rule.name!r}")
        if rule.read == "delta" and not anchor:
            raise PresetError(path, f"{where}.read",
                              "a delta read needs verdict.anchor_step; expected \"level\"")
        rules.append(rule)
    return VerdictSpec(shape.metric, anchor, endpoint, shape.healthy, shape.drift,
                       shape.reference, shape.drift_fraction, shape.direction, shape.read,
                       tuple(rules), str(f["combine"]))


def _rule_shape(path: Path, where: str, f: Mapping[str, Scalar],
                comparators: Mapping[str, Comparator], name: str = "") -> RuleShape:
    """One rule's metric, direction, read and bounds, held to their rules."""
    metric, direction, read = str(f["metric"]), str(f["direction"]), str(f["read"])
    if not METRIC_PATH.fullmatch(metric):
        raise PresetError(path, f"{where}.metric",
                          f"expected a field of the eval record or a dotted path into it "
                          f"(like eval_chunk_mae or breakdown.rig), got {metric!r}")
    _choice(path, f"{where}.direction", direction, DIRECTIONS)
    _choice(path, f"{where}.read", read, READS)
    lower = direction == "lower"
    keys = ("healthy_max", "drift_min") if lower else ("healthy_min", "drift_max")
    others = ("healthy_min", "drift_max") if lower else ("healthy_max", "drift_min")
    for key in others:
        if math.isfinite(float(f[key])):
            raise PresetError(path, f"{where}.{key}",
                              f"not a bound when {direction} is better (expected "
                              f"{' and '.join(keys)})")
    for key in keys:
        if not math.isfinite(float(f[key])):
            raise PresetError(path, f"{where}.{key}",
                              f"missing; expected a number (with {direction} better, the "
                              f"bounds are {' and '.join(keys)})")
    healthy, drift = float(f[keys[0]]), float(f[keys[1]])
    if (healthy >= drift) if lower else (healthy <= drift):
        raise PresetError(path, f"{where}.{keys[0]}",
                          f"expected a healthy bound {'below' if lower else 'above'} "
                          f"{keys[1]} {drift}, got {healthy}")
    ref, fraction = str(f["reference"]), float(f["drift_fraction"])
    if ref and ref not in comparators:
        raise PresetError(path, f"{where}.reference",
                          f"expected the name of a [comparators.*] table, got {ref!r}")
    if math.isfinite(fraction):
        if not ref:
            raise PresetError(path, f"{where}.reference",
                              "missing; drift_fraction is a fraction of a comparator's delta: "
                              "expected the comparator's name")
        if not 0 < fraction <= 1:
            raise PresetError(path, f"{where}.drift_fraction",
                              f"expected a fraction in (0, 1], got {fraction}")
        implied = fraction * comparators[ref].delta
        if abs(implied - drift) > ROUNDING:
            raise PresetError(path, f"{where}.{keys[1]}",
                              f"expected drift_fraction x comparators.{ref}.delta = "
                              f"{fraction} x {comparators[ref].delta} = {implied:.5f} "
                              f"(to 4 decimals), got {drift}")
    return RuleShape(name, metric, direction, read, healthy, drift, ref, fraction)


def _verdict_canonical(fields: Mapping[str, Scalar], spec: VerdictSpec) -> dict[str, object]:
    """[verdict] as hashed: defaults of keys newer than the first presets left out, so a
    preset written before them hashes as it did (its prereg.json still matches)."""
    out: dict[str, object] = {k: v for k, v in _set_only(fields).items()
                              if k not in VERDICT_QUIET or v != VERDICT_QUIET[k]}
    if spec.secondary:
        out["secondary"] = [
            _set_only({"name": r.name, "metric": r.metric, "direction": r.direction,
                       "read": r.read, r.bound_keys[0]: r.healthy, r.bound_keys[1]: r.drift,
                       **({"reference": r.reference} if r.reference else {}),
                       "drift_fraction": r.drift_fraction})
            for r in spec.secondary]
    return out


_T = TypeVar("_T")


def _made(cls: type[_T], fields: Mapping[str, Scalar], **more: object) -> _T:
    """A section's dataclass from what _check_section returned: each value already has its
    spec row's type, which mypy cannot follow from the Spec tables (hence the one cast)."""
    return cls(**more, **cast(dict[str, Any], fields))


def _comparators(path: Path, table: object, every: int) -> dict[str, Comparator]:
    if not isinstance(table, dict):
        raise PresetError(path, "comparators", "expected [comparators.NAME] tables")
    out: dict[str, Comparator] = {}
    for name, body in table.items():
        c = _made(Comparator, _check_section(path, f"comparators.{name}", body, COMPARATOR),
                  name=name)
        if c.level_step and c.level_step % every:
            raise PresetError(path, f"comparators.{name}.level_step",
                              f"expected a multiple of recipe.eval_every = {every}")
        out[name] = c
    return out


def _amendments(path: Path, items: object, comparators: Mapping[str, Comparator],
                spec: VerdictSpec, every: int) -> tuple[Amendment, ...]:
    if not isinstance(items, list):
        raise PresetError(path, "amendments", "expected an array of [[amendments]] tables")
    out: list[Amendment] = []
    for i, body in enumerate(items):
        where = f"amendments[{i}]"
        fields = _check_section(path, where, body, AMENDMENT)
        am = _made(Amendment, fields)
        if am.id in {a.id for a in out}:
            raise PresetError(path, f"{where}.id", f"expected a unique id, got {am.id} twice")
        _choice(path, f"{where}.kind", am.kind, AMENDMENT_KINDS)
        if am.kind == "scale":
            validate_scale_amendment(path, where, fields, comparators, every)
        else:
            validate_extend_amendment(path, where, am.to_step, spec, every)
        if am.declared_after_step >= am.declared_before_step:
            raise PresetError(path, f"{where}.declared_before_step",
                              f"expected a step after declared_after_step "
                              f"{am.declared_after_step}, got {am.declared_before_step}")
        out.append(am)
    if sum(a.kind == "scale" for a in out) > 1:
        raise PresetError(path, "amendments", "expected at most one scale amendment")
    return tuple(out)


def validate_extend_amendment(path: str | Path, where: str, to_step: int, spec: VerdictSpec,
                              every: int) -> None:
    """An extend names a later probe step as the endpoint."""
    if to_step <= spec.endpoint_step or to_step % every:
        raise PresetError(path, f"{where}.to_step",
                          f"expected a probe step (a multiple of {every}) after the endpoint "
                          f"{spec.endpoint_step}, got {to_step}")


def validate_scale_amendment(path: str | Path, where: str, fields: Mapping[str, object],
                             comparators: Mapping[str, Comparator], every: int) -> None:
    """A scale amendment names either a fixed factor or a (comparator, from_step) level ratio."""
    factor = fields.get("factor", math.nan)
    if isinstance(factor, float) and math.isfinite(factor):
        if factor <= 0:
            raise PresetError(path, f"{where}.factor", f"expected a positive factor, got {factor}")
        return
    name = fields.get("comparator", "")
    if name not in comparators or not isinstance(name, str):  # a name found is a str
        raise PresetError(path, f"{where}.comparator",
                          f"expected a comparator name or a fixed factor, got {name!r}")
    comp = comparators[name]
    step = fields.get("from_step", 0)
    if not isinstance(step, int) or step <= 0 or step % every:
        raise PresetError(path, f"{where}.from_step",
                          f"expected a probe step (a multiple of {every}), got {step}")
    if comp.level_step != step or not math.isfinite(comp.eval_level) or comp.eval_level <= 0:
        raise PresetError(path, f"{where}.from_step",
                          f"expected comparators.{name} to bank a positive eval_level at "
                          f"level_step = {step}")


# -- finding and loading --------------------------------------------------------------------


def preset_dirs() -> list[Path]:
    """Where preset names are looked up, first match wins."""
    dirs = []
    if env := os.environ.get("FONTAINE_PRESETS"):
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
    dirs.append(Path.cwd() / "presets")
    dirs.append(Path(__file__).resolve().parents[3] / "presets")
    seen, out = set(), []
    for d in dirs:
        key = d.resolve() if d.exists() else d
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def resolve(name_or_path: str) -> Path:
    """A preset name (looked up in preset_dirs) or a path to a .toml file."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or os.sep in name_or_path:
        if not candidate.is_file():
            raise PresetError(candidate, "file", "no such preset file")
        return candidate
    for d in preset_dirs():
        p = d / f"{name_or_path}.toml"
        if p.is_file():
            return p
    known = ", ".join(sorted(list_presets())) or "none"
    raise PresetError(name_or_path, "name", f"no such preset (known: {known})")


def list_presets() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in preset_dirs():
        if d.is_dir():
            for p in sorted(d.glob("*.toml")):
                found.setdefault(p.stem, p)
    return found


def load_preset(name_or_path: str | Path) -> Preset:
    path = resolve(str(name_or_path))
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PresetError(path, "file", f"cannot read ({exc.strerror})") from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise PresetError(path, "file", "expected UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise PresetError(path, "toml", f"expected valid TOML ({exc})") from None
    return _validate(path, doc)


def preset_from_canonical(data: Mapping[str, object], origin: str) -> Preset:
    """Rebuild a preset from its canonical form (as frozen in prereg.json)."""
    doc = json.loads(canonical_bytes(data))
    return _validate(Path(origin), doc)
