"""The single-delta rule: `[verdict] delta_keys`, and this run's recipe beside its comparator's.

A preset that states `delta_keys` says which [recipe] and [platform] keys may differ from the
banked comparator's frozen preset (the reference comparator, or the one banked comparator).
Every other key must match, except the machinery keys in MACHINERY, which never change a
number the run computes. The launch's single-delta guard (core/launch/delta_guard.py)
compares them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from fontaine_tui.core.bank.store import BankedRun
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.preset.checks import PresetError, Scalar
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.preset.rule import Comparator
from fontaine_tui.core.preset.sections import PLATFORM, RECIPE
from fontaine_tui.core.secrets import mask_text

# Keys never compared: where the data lies, how many loader processes fetch it, how eval is
# batched, where ranks meet and when checkpoints are written. The engine keys every batch by
# its step (engine/pipeline.py), so loader workers and prefetch do not change what is trained;
# eval_batch only cuts the eval into forward passes; data_dir is a path (the data's identity
# is its fingerprint in the provenance); checkpoints and the breakdown only write files.
MACHINERY = (
    "platform.num_workers",
    "platform.prefetch_factor",
    "platform.data_dir",
    "platform.eval_batch",
    "platform.node_rank",
    "platform.rdzv_endpoint",
    "platform.rdzv_id",
    "recipe.save_every",
    "recipe.eval_dataset_breakdown",
)
SECTIONS = {"recipe": RECIPE, "platform": PLATFORM}


def compared_keys() -> tuple[str, ...]:
    """Every [recipe] and [platform] key the guard compares (all but MACHINERY)."""
    every = [f"{s}.{k}" for s, spec in SECTIONS.items() for k in spec]
    return tuple(k for k in every if k not in MACHINERY)


def read_delta_keys(
    path: Path,
    value: object,
    comparators: Mapping[str, Comparator],
    reference: str,
    engine: bool,
) -> tuple[str, ...] | None:
    """Check `[verdict] delta_keys`; None when the preset does not state it (no guard)."""
    if value is None:
        return None
    where = "verdict.delta_keys"
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise PresetError(path, where, 'expected an array of keys, like ["platform.nproc"]')
    if not engine:
        raise PresetError(path, where, "a [source] preset has no [recipe] or [platform] to compare")
    known = compared_keys()
    for key in value:
        if key not in known:
            raise PresetError(
                path,
                where,
                f"{key!r} is not a compared key (expected recipe.KEY or platform.KEY; "
                f"never compared: {', '.join(MACHINERY)})",
            )
    if len(set(value)) != len(value):
        raise PresetError(path, where, "expected each key once")
    delta_comparator(path, comparators, reference)
    return tuple(value)


def delta_comparator(
    path: Path | str, comparators: Mapping[str, Comparator], reference: str
) -> Comparator:
    """The banked comparator delta_keys are held against.

    It is the reference comparator, or else the only banked one; a PresetError otherwise."""
    banked = [c for c in comparators.values() if c.bank]
    if reference and reference in comparators:
        if not comparators[reference].bank:
            raise PresetError(
                path,
                "verdict.delta_keys",
                f"the reference comparator {reference!r} is typed in; expected a banked one "
                '(bank = "NAME"), whose frozen recipe is compared',
            )
        return comparators[reference]
    if len(banked) != 1:
        raise PresetError(
            path,
            "verdict.delta_keys",
            f"expected verdict.reference naming a banked comparator, or exactly one banked "
            f"comparator (found {len(banked)})",
        )
    return banked[0]


def against(preset: Preset) -> tuple[str, list[tuple[str, str, str]]]:
    """The banked comparator's NAME@sha prefix, and each compared key that differs from it.

    An InputError when the comparator's entry is not in this bank or holds no frozen recipe."""
    comparator = delta_comparator(preset.path, preset.comparators, preset.verdict.reference)
    entry = comparator.entry
    theirs = frozen_sections(entry) if entry is not None else None
    if entry is None or theirs is None:
        what = "is not in this bank" if entry is None else "holds no prereg.json with a [recipe]"
        raise InputError(
            f"{preset.path}: verdict.delta_keys: the banked comparator {comparator.name} "
            f"({comparator.bank}) {what}: its recipe cannot be compared"
        )
    return f"{entry.name}@{entry.sha256[:12]}", differences(preset.recipe, preset.platform, theirs)


def frozen_sections(entry: BankedRun) -> dict[str, dict[str, object]] | None:
    """The banked run's frozen [recipe] and [platform], defaults filled in; None without them."""
    prereg = entry.doc.get("prereg")
    preset = prereg.get("preset") if isinstance(prereg, Mapping) else None
    if not isinstance(preset, Mapping) or not isinstance(preset.get("recipe"), Mapping):
        return None
    platform = preset.get("platform")
    return {
        "recipe": with_defaults(preset["recipe"], RECIPE),
        "platform": with_defaults(platform if isinstance(platform, Mapping) else {}, PLATFORM),
    }


def with_defaults(
    table: Mapping[str, object], spec: Mapping[str, tuple[object, object]]
) -> dict[str, object]:
    """A frozen section with each key left out at its default (LATER_KEYS) put back."""
    out = {k: d for k, (_, d) in spec.items() if isinstance(d, (str, int, float, bool))}
    return {**out, **table}


def differences(
    recipe: Mapping[str, Scalar], platform: Mapping[str, Scalar], theirs: Mapping[str, Mapping]
) -> list[tuple[str, str, str]]:
    """Each compared key whose value differs, by name: (key, ours, theirs) as JSON text."""
    ours = {"recipe": dict(recipe), "platform": dict(platform)}
    out = []
    for key in sorted(compared_keys()):
        section, name = key.split(".", 1)
        a, b = ours[section].get(name), theirs[section].get(name)
        if not _same(a, b):
            out.append((key, show(a), show(b)))
    return out


def _same(a: object, b: object) -> bool:
    """Equal as numbers (3e-4 and 0.0003, 1 and 1.0), else equal as values."""
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool):
        return not isinstance(b, bool) and float(a) == float(b)
    return a == b


def show(value: object) -> str:
    """A value as JSON text ("(absent)" when a side does not have the key).

    Its credentials are masked (core/secrets.py): it is shown, and a declared delta is written
    to the ledger."""
    return "(absent)" if value is None else mask_text(json.dumps(value))
