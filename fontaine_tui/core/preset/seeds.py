"""`[verdict] seed_group`: a group of banked comparators declared as seeds of one recipe.

Their spread is the seed-noise floor (core/verdict/seednoise.py). Seeds must be independent
runs of one recipe: each member banked, no banked run twice, no recipe seed twice, and no
other recipe key different (the machinery keys aside). A member whose bank entry is not here
(a frozen preset read elsewhere) is not checked again: it was checked when it was frozen."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from fontaine_tui.core.bank.store import BankedRun
from fontaine_tui.core.preset.checks import PresetError
from fontaine_tui.core.preset.delta import MACHINERY
from fontaine_tui.core.preset.rule import Comparator

# recipe keys a seed may differ in besides the seed: they change no number the run computes
_FREE = {"seed", *(k.partition(".")[2] for k in MACHINERY if k.startswith("recipe."))}


def members(group: str, comparators: Mapping[str, Comparator]) -> list[Comparator]:
    """The comparators of `group`, in the preset's order."""
    return [c for c in comparators.values() if group and c.group == group]


def run_seed(entry: BankedRun | None) -> int | None:
    """The seed the banked run's meta record says it trained with (None: not recorded)."""
    recipe = entry.doc.get("recipe") if entry is not None else None
    seed = recipe.get("seed") if isinstance(recipe, dict) else None
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


def check_seed_group(path: Path, group: str, comparators: Mapping[str, Comparator]) -> None:
    """Hold `[verdict] seed_group` to its rules; one `file: key: expected` line when it breaks one."""
    if not group:
        return
    found = members(group, comparators)
    if not found:
        groups = sorted({c.group for c in comparators.values() if c.group})
        raise PresetError(
            path,
            "verdict.seed_group",
            f"expected the `group` of some [comparators.*] tables, got {group!r} "
            f"(groups: {', '.join(groups) or 'none'})",
        )
    said = f"the seeds of verdict.seed_group {group!r}"
    seen: list[Comparator] = []
    for c in found:
        if not c.bank:
            raise PresetError(
                path,
                f"comparators.{c.name}.bank",
                f'missing; {said} must be banked runs (bank = "NAME"): a typed-in number '
                "has no curve to read the seed noise from",
            )
        for other in seen:
            _independent(path, said, other, c)
        seen.append(c)


def _independent(path: Path, said: str, first: Comparator, c: Comparator) -> None:
    """Refuse `c` when it is no independent seed beside `first`."""
    where = f"comparators.{c.name}.bank"
    if c.bank == first.bank:
        raise PresetError(
            path,
            where,
            f"the same banked run as comparators.{first.name} ({_short(c.bank)}): {said} "
            "must be independent runs",
        )
    if c.entry is None or first.entry is None:
        return
    if c.entry.probes() and c.entry.probes() == first.entry.probes():
        raise PresetError(
            path,
            where,
            f"every probe the same as comparators.{first.name}'s ({_short(first.bank)}): one "
            f"run banked twice, or a copy; {said} must be independent runs",
        )
    seed = run_seed(c.entry)
    if seed is not None and seed == run_seed(first.entry):
        raise PresetError(
            path,
            where,
            f"recipe.seed {seed}, the same as comparators.{first.name}'s "
            f"({_short(first.bank)}): {said} must be independent runs",
        )
    _differ_only_in_seed(path, where, said, first.name, (c.entry, first.entry))


def _differ_only_in_seed(
    path: Path, where: str, said: str, first: str, runs: tuple[BankedRun, BankedRun]
) -> None:
    """Refuse a seed whose banked recipe differs from the first's (`runs`) other than in its seed.

    Runs banked without a recipe (another trainer's) are not compared."""
    ours, theirs = runs[0].doc.get("recipe"), runs[1].doc.get("recipe")
    if not (isinstance(ours, dict) and isinstance(theirs, dict)):
        return
    for key in sorted((ours.keys() | theirs.keys()) - _FREE):
        if ours.get(key) != theirs.get(key):
            raise PresetError(
                path,
                where,
                f"recipe.{key} {ours.get(key)!r}, comparators.{first}'s "
                f"{theirs.get(key)!r}: {said} must differ only in recipe.seed",
            )


def _short(ref: str) -> str:
    name, _, sha = ref.partition("@")
    return f"{name}@{sha[:12]}" if sha else name
