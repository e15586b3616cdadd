"""A preset's [comparators.NAME]: numbers typed in, or read from a banked run.

A banked comparator (`bank = "NAME"`) is read as the preset's rule reads this run, pinned to
the banked version's sha256."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path

from fontaine_tui.core.bank import store as bank
from fontaine_tui.core.bank.store import BankedRun
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.preset.checks import PresetError, Scalar, check_section, made
from fontaine_tui.core.preset.rule import Comparator
from fontaine_tui.core.preset.sections import COMPARATOR
from fontaine_tui.core.text import literal

KEYS_SHOWN = 12  # the banked keys named when the rule's metric is not among them


def read_comparators(
    path: Path,
    table: object,
    every: int,
    rule: Mapping[str, Scalar],
    source: SourceSpec | None = None,
) -> dict[str, Comparator]:
    if not isinstance(table, dict):
        raise PresetError(path, "comparators", "expected [comparators.NAME] tables")
    out: dict[str, Comparator] = {}
    for name, body in table.items():
        fields = check_section(path, f"comparators.{name}", body, COMPARATOR)
        if fields["bank"]:
            c = _banked(path, name, fields, rule, source)
        elif not math.isfinite(float(fields["delta"])):
            raise PresetError(
                path,
                f"comparators.{name}.delta",
                'missing; expected a number, or bank = "NAME" (a banked run)',
            )
        else:
            c = made(Comparator, fields, name=name)
        if c.level_step and c.level_step % every:
            raise PresetError(
                path,
                f"comparators.{name}.level_step",
                f"expected a multiple of recipe.eval_every = {every}",
            )
        out[name] = c
    return out


def _banked(
    path: Path,
    name: str,
    fields: Mapping[str, Scalar],
    rule: Mapping[str, Scalar],
    source: SourceSpec | None = None,
) -> Comparator:
    """Build a comparator from the bank.

    Its delta (or level) is read from the banked run's curve as the preset's rule reads this run,
    pinned to the banked version's sha256. A frozen preset (prereg.json) carries the numbers and
    the full sha256, so it reads where the bank is not. Where the bank is, the numbers must be
    the banked run's. The entry read here goes with the comparator: the rules read its curves
    from it, never from the bank again."""
    where = f"comparators.{name}"
    ref, delta = str(fields["bank"]), float(fields["delta"])
    pinned = re.fullmatch(r"[^@]+@[0-9a-f]{64}", ref) is not None
    metric, read = str(rule["metric"]), str(rule["read"])
    anchor, endpoint = int(rule["anchor_step"]), int(rule["endpoint_step"])
    try:
        entry = bank.get(ref)
    except InputError as exc:
        if pinned and math.isfinite(delta):  # frozen form, read without the bank
            return made(
                Comparator,
                {k: v for k, v in fields.items() if k != "bank"},
                name=name,
                bank=ref,
                where="banked run (its bank entry is not here)",
            )
        raise PresetError(path, f"{where}.bank", f"{exc}") from None
    _refuse_unbankable(path, where, entry, delta, pinned)
    computed = _banked_delta(path, where, entry, (metric, read), (anchor, endpoint), source)
    if math.isfinite(delta) and abs(delta - computed) > 1e-9:
        raise PresetError(
            path,
            f"{where}.delta",
            f"expected the banked run's {computed!r} ({entry.name}@{entry.sha256[:12]}), "
            f"got {delta!r}",
        )
    level_step = int(fields["level_step"])
    eval_level, train_level = _levels(fields, entry, metric, level_step)
    return Comparator(
        name,
        computed,
        level_step,
        eval_level,
        train_level,
        str(fields["description"]) or str(entry.doc.get("note") or ""),
        entry.ref,
        str(fields["group"]),
        entry.where(),
        entry,
        metric_curve(entry, metric, read, anchor),
    )


def _refuse_unbankable(
    path: Path, where: str, entry: BankedRun, delta: float, pinned: bool
) -> None:
    """Refuse a banked run no bound is derived from, and a delta written beside an unpinned bank.

    A run banked at the user's word although its own evidence conflicts gives no bound; a
    delta is the banked run's to say, except in the frozen form (pinned to the full sha256)."""
    if entry.marked:
        raise PresetError(
            path,
            f"{where}.bank",
            f"the banked run {entry.name}@{entry.sha256[:12]} was banked with its "
            f"own evidence conflicting ({'; '.join(entry.marked)}): no bound is "
            "derived from it",
        )
    if math.isfinite(delta) and not pinned:
        raise PresetError(
            path,
            f"{where}.delta",
            "a banked comparator's delta is read from the banked run; remove it",
        )


def _banked_delta(
    path: Path,
    where: str,
    entry: BankedRun,
    reading: tuple[str, str],
    steps: tuple[int, int],
    source: SourceSpec | None,
) -> float:
    """The banked run's delta (or level) of the rule's metric, from anchor to endpoint.

    `reading`: the rule's (metric, read); `steps`: its (anchor, endpoint). Refused where the
    run has no finite value at either step: which step, or that the run holds the metric at no
    probe at all (`_keyless`)."""
    metric, read = reading
    anchor, endpoint = steps
    end = entry.value(endpoint, metric)
    start = entry.value(anchor, metric) if read == "delta" else 0.0
    if math.isfinite(end) and math.isfinite(start):
        return end - start
    if metric not in entry.keys():
        raise PresetError(path, f"{where}.bank", _keyless(entry, metric, source))
    step = endpoint if not math.isfinite(end) else anchor
    raise PresetError(
        path,
        f"{where}.bank",
        f"the banked run {entry.name} has no {metric} at step {step} "
        f"(its probes: {', '.join(map(str, entry.probes())) or 'none'})",
    )


def _levels(
    fields: Mapping[str, Scalar], entry: BankedRun, metric: str, level_step: int
) -> tuple[float, float]:
    """The (eval, train) levels: as written, or, unwritten with a level_step, the banked run's.

    The eval level is the rule's metric at level_step; the train level, train_chunk_mae."""
    eval_level, train_level = float(fields["eval_level"]), float(fields["train_level"])
    if level_step and not math.isfinite(eval_level):
        eval_level = entry.value(level_step, metric)
    if level_step and not math.isfinite(train_level):
        train_level = entry.value(level_step, "train_chunk_mae")
    return eval_level, train_level


def _keyless(entry: BankedRun, metric: str, source: SourceSpec | None) -> str:
    """Why a banked run holds no `metric` at all: the keys it has, and how to bank it anew.

    A run is banked by the keys of the record it was read from: a Trainer's TensorBoard events
    say eval/loss where its trainer_state.json, which an hf_trainer preset reads, says
    eval_loss. Banked again as this preset reads its own run, it holds the preset's keys."""
    keys = entry.keys()
    shown = ", ".join(keys[:KEYS_SHOWN]) + (
        f" and {len(keys) - KEYS_SHOWN} more" if len(keys) > KEYS_SHOWN else ""
    )
    # a foreign run's source names its file and kind; one of ours, its folder
    origin = f"banked from {entry.doc.get('source')}" + (
        "" if entry.doc.get("format") else ", a run of this console's"
    )
    again = f"fontaine-tui bank add RUN --as {entry.name} --replace"
    if source is not None and source.kind != "fontaine":
        read = (  # a bare kind is --kind; a [source] that says more is a preset's own
            f"--kind {source.kind}"
            if set(source.canonical()) == {"kind"}
            else "-p PRESET (a preset of that run's with this [source])"
        )
        how = f'as this preset reads it ([source] kind = "{source.kind}"): {again} --ended {read}'
    else:
        how = f"from a run of this console's (its {metric} in train_log.jsonl): {again}"
    return literal(
        f"the banked run {entry.name} has no {metric} in any probe: its probes hold "
        f"{shown or 'no number'} ({origin}); bank the run {how}"
    )


def metric_curve(
    entry: BankedRun, metric: str, read: str, anchor: int
) -> tuple[tuple[int, float], ...]:
    """The (step, delta or level) of `metric` at each probe the banked run measured.

    For a delta read, the points run from the anchor on; () when the anchor has no finite value."""
    levels = [(s, entry.value(s, metric)) for s in sorted(entry.probes())]
    if read == "level":
        return tuple(levels)
    base = dict(levels).get(anchor, math.nan)
    if not math.isfinite(base):
        return ()
    return tuple((s, v - base) for s, v in levels if s >= anchor)
