"""A preset's [[amendments]], each one's keys and kind held to their rules.

A scale names a factor or a comparator's level, an extend a later probe step. The ledger's
declarations are held to the same rules."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from fontaine_tui.core.preset.checks import PresetError, check_section, choice, made
from fontaine_tui.core.preset.record import Amendment
from fontaine_tui.core.preset.rule import Comparator, VerdictSpec
from fontaine_tui.core.preset.sections import AMENDMENT, AMENDMENT_KINDS


def parse_amendments(
    path: Path, items: object, comparators: Mapping[str, Comparator], spec: VerdictSpec, every: int
) -> tuple[Amendment, ...]:
    """The preset's [[amendments]] tables as Amendments, each checked (PresetError if not)."""
    if not isinstance(items, list):
        raise PresetError(path, "amendments", "expected an array of [[amendments]] tables")
    out: list[Amendment] = []
    ids: set[int] = set()  # kept as they come: a set built per amendment made this quadratic
    for i, body in enumerate(items):
        where = f"amendments[{i}]"
        fields = check_section(path, where, body, AMENDMENT)
        am = made(Amendment, fields)
        if am.id in ids:
            raise PresetError(path, f"{where}.id", f"expected a unique id, got {am.id} twice")
        ids.add(am.id)
        choice(path, f"{where}.kind", am.kind, AMENDMENT_KINDS)
        if am.kind == "scale":
            validate_scale_amendment(path, where, fields, comparators, every)
        else:
            validate_extend_amendment(path, where, am.to_step, spec, every)
        if am.declared_after_step >= am.declared_before_step:
            raise PresetError(
                path,
                f"{where}.declared_before_step",
                f"expected a step after declared_after_step "
                f"{am.declared_after_step}, got {am.declared_before_step}",
            )
        out.append(am)
    if sum(a.kind == "scale" for a in out) > 1:
        raise PresetError(path, "amendments", "expected at most one scale amendment")
    return tuple(out)


def validate_extend_amendment(
    path: str | Path, where: str, to_step: int, spec: VerdictSpec, every: int
) -> None:
    """An extend names a later probe step as the endpoint."""
    if to_step <= spec.endpoint_step or to_step % every:
        raise PresetError(
            path,
            f"{where}.to_step",
            f"expected a probe step (a multiple of {every}) after the endpoint "
            f"{spec.endpoint_step}, got {to_step}",
        )


def validate_scale_amendment(
    path: str | Path,
    where: str,
    fields: Mapping[str, object],
    comparators: Mapping[str, Comparator],
    every: int,
) -> None:
    """A scale amendment names either a fixed factor or a (comparator, from_step) level ratio."""
    factor = fields.get("factor", math.nan)
    if isinstance(factor, float) and math.isfinite(factor):
        if factor <= 0:
            raise PresetError(path, f"{where}.factor", f"expected a positive factor, got {factor}")
        return
    _validate_level_ratio(path, where, fields, comparators, every)


def _validate_level_ratio(
    path: str | Path,
    where: str,
    fields: Mapping[str, object],
    comparators: Mapping[str, Comparator],
    every: int,
) -> None:
    """A scale by level ratio: a comparator that banks a positive eval_level at from_step."""
    name = fields.get("comparator", "")
    if name not in comparators or not isinstance(name, str):  # a name found is a str
        raise PresetError(
            path,
            f"{where}.comparator",
            f"expected a comparator name or a fixed factor, got {name!r}",
        )
    comp = comparators[name]
    step = fields.get("from_step", 0)
    if not isinstance(step, int) or step <= 0 or step % every:
        raise PresetError(
            path, f"{where}.from_step", f"expected a probe step (a multiple of {every}), got {step}"
        )
    if comp.level_step != step or not math.isfinite(comp.eval_level) or comp.eval_level <= 0:
        raise PresetError(
            path,
            f"{where}.from_step",
            f"expected comparators.{name} to bank a positive eval_level at level_step = {step}",
        )
