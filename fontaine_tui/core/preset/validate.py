"""A preset document held to its rules.

Every section is checked, the first thing wrong gives one `file: key: expected` line, and a
valid document gives the Preset with its canonical form and sha256. The checks are a table
(`_CHECKS`): one small checker per section, run in order, each adding what its section gives
to the document's `_Reading`; the order of the table is the order faults are named in."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from types import MappingProxyType
from typing import cast

from fontaine_tui.core.log.formats.source import SourceSpec, read_spec
from fontaine_tui.core.preset.amendments import parse_amendments
from fontaine_tui.core.preset.checks import (
    LABELS,
    PresetError,
    Scalar,
    canonical_bytes,
    check_section,
    choice,
    positive,
    set_only,
)
from fontaine_tui.core.preset.command import CommandSpec, check_source_path, read_command
from fontaine_tui.core.preset.comparators import read_comparators
from fontaine_tui.core.preset.delta import read_delta_keys
from fontaine_tui.core.preset.record import Amendment, Preset
from fontaine_tui.core.preset.recovery import RecoverySpec, read_recovery
from fontaine_tui.core.preset.rule import (
    VERDICT,
    Comparator,
    VerdictSpec,
    check_labels,
    check_placeholders,
    verdict_canonical,
    verdict_spec,
)
from fontaine_tui.core.preset.sections import (
    AMENDMENT,
    COMPARATOR,
    DEVICES,
    GATES,
    INITS,
    MODEL_SIZES,
    OBJECTIVES,
    PLATFORM,
    PRECISIONS,
    RECIPE,
    RUN,
    SECTIONS,
    PlatformFields,
    RecipeFields,
    frozen_form,
    layout,
)
from fontaine_tui.core.preset.seeds import check_seed_group
from fontaine_tui.core.preset.watching import (
    NotifySpec,
    babysit_canonical,
    babysit_section,
    notify_section,
    slurm_section,
)


@dataclasses.dataclass(slots=True)
class _Reading:
    """A document as its checks read it: each checker adds what its section gives."""

    path: Path
    doc: dict
    source: SourceSpec | None = None
    source_every: int = 0  # [source] eval_every, 0 when not given
    command: CommandSpec | None = None
    engine: bool = True  # an engine recipe given (or stood in for a [source] preset)
    run: dict[str, Scalar] = field(init=False)
    recipe: dict[str, Scalar] = field(init=False)
    platform: dict[str, Scalar] = field(init=False)
    verdict_table: dict = field(init=False)
    verdict_fields: dict[str, Scalar] = field(init=False)
    gates: dict[str, Scalar] = field(init=False)
    babysit: dict[str, Scalar] = field(init=False)
    notify: tuple[NotifySpec, ...] = ()
    slurm: dict[str, Scalar] = field(init=False)
    recovery: RecoverySpec = RecoverySpec()
    stated: tuple[int, str] | None = None
    comparators: dict[str, Comparator] = field(init=False)
    verdict: VerdictSpec = field(init=False)
    amendments: tuple[Amendment, ...] = ()
    labels: dict[str, str] = field(init=False)
    interpretation: dict[str, str] = field(default_factory=dict)

    # The same tables key by key: check_section held each value to its spec row, which
    # mypy cannot follow from the Spec tables themselves.
    @property
    def rec(self) -> RecipeFields:
        return cast(RecipeFields, self.recipe)

    @property
    def plat(self) -> PlatformFields:
        return cast(PlatformFields, self.platform)


def validate(path: Path, doc: dict) -> Preset:
    """The Preset a parsed document makes, or a PresetError naming the first key wrong."""
    reading = _Reading(path, doc)
    for _section, check in _CHECKS:
        check(reading)
    return _preset(reading)


def _known_sections(r: _Reading) -> None:
    for key in r.doc:
        if key not in SECTIONS:
            raise PresetError(
                r.path, key, f"unknown section (expected one of: {', '.join(SECTIONS)})"
            )


def _placeholders(r: _Reading) -> None:
    check_placeholders(r.path, r.doc.get("verdict"))


def _source(r: _Reading) -> None:
    if "source" not in r.doc:
        return
    table = r.doc["source"]
    if isinstance(table, dict) and "eval_every" in table:  # the cadence, for the lock
        table = {k: v for k, v in table.items() if k != "eval_every"}
        r.source_every = _source_every(r.path, r.doc["source"]["eval_every"])
    try:
        r.source = read_spec(table)
    except ValueError as exc:
        raise PresetError(r.path, exc.args[0], exc.args[1]) from None


def _source_every(path: Path, every: object) -> int:
    if not (type(every) is int and every > 0):
        raise PresetError(
            path,
            "source.eval_every",
            f"expected a positive integer (the steps from one probe to the next), got {every!r}",
        )
    return every


def _command_section(r: _Reading) -> None:
    r.command = _command(r.path, r.doc)
    if r.source is not None:  # its path's placeholder, filled in by the launch of [command]
        check_source_path(r.doc["source"].get("path"), r.path, r.command is not None)


def _required_sections(r: _Reading) -> None:
    """The sections a preset cannot go without; a [source] preset's recipe stands in."""
    foreign = _foreign(r.source, r.command)
    for key in ("run", "verdict") if foreign else ("run", "recipe", "platform", "verdict"):
        if key not in r.doc:
            raise PresetError(r.path, key, "missing section")
    r.engine = not foreign or "recipe" in r.doc or "platform" in r.doc
    if foreign:  # no engine recipe: the run is another trainer's
        _stand_in(r)


def _foreign(source: SourceSpec | None, command: CommandSpec | None) -> bool:
    """Whether the run is another trainer's: read through [source], or started by [command]."""
    return source is not None and (source.kind != "fontaine" or command is not None)


def _stand_in(r: _Reading) -> None:
    doc = r.doc
    doc.setdefault("recipe", _foreign_recipe(doc["verdict"], r.source_every))
    doc.setdefault("platform", {})
    if r.command is None and isinstance(doc["run"], dict):
        # trained elsewhere; a command's run needs its folder
        doc["run"] = {"output_dir": "", **doc["run"]}


def _run(r: _Reading) -> None:
    r.run = check_section(r.path, "run", r.doc["run"], RUN)


def _recipe(r: _Reading) -> None:
    r.recipe = check_section(r.path, "recipe", r.doc["recipe"], RECIPE)


def _platform(r: _Reading) -> None:
    r.platform = check_section(r.path, "platform", r.doc["platform"], PLATFORM)


def _verdict(r: _Reading) -> None:
    table = r.doc["verdict"]
    if not isinstance(table, dict):
        raise PresetError(r.path, "verdict", "expected a table")
    r.verdict_table = table
    fields = {k: v for k, v in table.items() if k not in ("secondary", "delta_keys")}
    r.verdict_fields = check_section(r.path, "verdict", fields, VERDICT)


def _gates(r: _Reading) -> None:
    r.gates = check_section(r.path, "gates", r.doc.get("gates", {}), GATES)


def _babysit(r: _Reading) -> None:
    r.babysit = babysit_section(r.path, r.doc.get("babysit"))


def _notify(r: _Reading) -> None:
    r.notify = notify_section(r.path, r.doc.get("notify", []))


def _slurm(r: _Reading) -> None:
    r.slurm = slurm_section(r.path, r.doc.get("slurm"))


def _recovery(r: _Reading) -> None:
    r.recovery = read_recovery(r.path, r.doc.get("recovery"))
    if r.recovery.enabled and r.command is not None and not r.command.resume_argv:
        raise PresetError(
            r.path,
            "recovery.max_restarts",
            "expected [command] resume_argv too (a restart resumes the run), or 0",
        )


def _run_name(r: _Reading) -> None:
    if not r.run["name"]:
        raise PresetError(r.path, "run.name", "expected a non-empty string")


def _choices(r: _Reading) -> None:
    rec, plat = r.rec, r.plat
    choice(r.path, "recipe.model_size", rec["model_size"], MODEL_SIZES)
    choice(r.path, "recipe.objective", rec["objective"], OBJECTIVES)
    choice(r.path, "recipe.flow_decoder_init", rec["flow_decoder_init"], INITS)
    choice(r.path, "platform.device", plat["device"], DEVICES)
    choice(r.path, "platform.precision", plat["precision"], PRECISIONS)


def _counts(r: _Reading) -> None:
    rec, plat = r.rec, r.plat
    for knob in ("batch_size", "backward_chunks", "steps", "eval_every", "save_every"):
        positive(r.path, f"recipe.{knob}", rec[knob])
    positive(r.path, "platform.nproc", plat["nproc"])
    positive(r.path, "platform.eval_batch", plat["eval_batch"])
    positive(r.path, "platform.nnodes", plat["nnodes"])


def _nodes(r: _Reading) -> None:
    plat = r.plat
    if plat["node_rank"] >= plat["nnodes"]:
        raise PresetError(
            r.path,
            "platform.node_rank",
            f"expected an integer below platform.nnodes = {plat['nnodes']}, "
            f"got {plat['node_rank']}",
        )
    if plat["nnodes"] > 1 and not re.fullmatch(r"\S+:\d+", plat["rdzv_endpoint"]):
        raise PresetError(
            r.path,
            "platform.rdzv_endpoint",
            f"expected HOST:PORT of the rendezvous with platform.nnodes = "
            f"{plat['nnodes']}, got {plat['rdzv_endpoint']!r}",
        )


def _loaders(r: _Reading) -> None:
    positive(r.path, "platform.num_workers", r.plat["num_workers"], 0)
    positive(r.path, "platform.prefetch_factor", r.plat["prefetch_factor"])


def _rates(r: _Reading) -> None:
    rec = r.rec
    if not 0.0 <= rec["image_augment"] <= 1.0:
        raise PresetError(
            r.path,
            "recipe.image_augment",
            f"expected a probability in [0, 1], got {rec['image_augment']}",
        )
    if rec["lr"] <= 0:
        raise PresetError(r.path, "recipe.lr", f"expected a positive number, got {rec['lr']}")


def _layout(r: _Reading) -> None:
    layout(r.path, r.rec, r.plat)


def _cadence(r: _Reading) -> None:
    """The probe cadence the preset states: [recipe]'s, which a [source] one may only repeat."""
    every, source_every = r.rec["eval_every"], r.source_every
    if r.engine and source_every and source_every != every:
        raise PresetError(
            r.path,
            "source.eval_every",
            f"expected recipe.eval_every = {every} or left out, got {source_every}",
        )
    if r.engine:
        r.stated = (every, "recipe.eval_every")
    elif source_every:
        r.stated = (source_every, "source.eval_every")


def _comparators(r: _Reading) -> None:
    table = r.doc.get("comparators", {})
    every = r.rec["eval_every"]
    r.comparators = read_comparators(r.path, table, every, r.verdict_fields, r.source)


def _rule(r: _Reading) -> None:
    rec, secondary = r.rec, r.verdict_table.get("secondary", [])
    verdict = verdict_spec(
        r.path, r.verdict_fields, r.comparators, rec["eval_every"], rec["steps"], secondary
    )
    delta_keys = read_delta_keys(
        r.path, r.verdict_table.get("delta_keys"), r.comparators, verdict.reference, r.engine
    )
    r.verdict = dataclasses.replace(verdict, delta_keys=delta_keys)
    check_seed_group(r.path, r.verdict.seed_group, r.comparators)


def _amendments(r: _Reading) -> None:
    table = r.doc.get("amendments", [])
    r.amendments = parse_amendments(r.path, table, r.comparators, r.verdict, r.rec["eval_every"])


def _labels(r: _Reading) -> None:
    r.labels = check_labels(r.path, r.doc.get("labels", {}))


def _interpretation(r: _Reading) -> None:
    by_label = {text: cls for cls, text in r.labels.items()}
    interp = r.doc.get("interpretation", {})
    if not isinstance(interp, dict):
        raise PresetError(r.path, "interpretation", "expected a table")
    for key, value in interp.items():
        cls, text = _interpreted(r, by_label, key, value)
        r.interpretation[cls] = " ".join(text.split())


def _interpreted(
    r: _Reading, by_label: Mapping[str, str], key: str, value: object
) -> tuple[str, str]:
    """The class an [interpretation] key names and its words, each class once."""
    # a label names its class, and so does the class's own name: prereg.json freezes the
    # table keyed by class (no label is another class's name: check_labels)
    cls = by_label.get(key, key)
    if cls not in LABELS:
        names = [r.labels.get(c, c) for c in LABELS]
        raise PresetError(
            r.path, f"interpretation.{key}", f"unknown key (expected one of: {', '.join(names)})"
        )
    if not isinstance(value, str):
        raise PresetError(r.path, f"interpretation.{key}", "expected a string")
    if cls in r.interpretation:
        raise PresetError(
            r.path,
            f"interpretation.{key}",
            f"expected each class once, got {cls} under both its name and its label",
        )
    return cls, value


# The checks in the order a document's faults are named: the first fault raises.
_CHECKS: tuple[tuple[str, Callable[[_Reading], None]], ...] = (
    ("sections", _known_sections),
    ("verdict", _placeholders),  # a bound still a placeholder says what to do, first
    ("source", _source),
    ("command", _command_section),
    ("sections", _required_sections),
    ("run", _run),
    ("recipe", _recipe),
    ("platform", _platform),
    ("verdict", _verdict),
    ("gates", _gates),
    ("babysit", _babysit),
    ("notify", _notify),
    ("slurm", _slurm),
    ("recovery", _recovery),
    ("run", _run_name),
    ("recipe", _choices),  # and platform's
    ("recipe", _counts),  # and platform's
    ("platform", _nodes),
    ("platform", _loaders),
    ("recipe", _rates),
    ("recipe", _layout),  # and platform's
    ("source", _cadence),
    ("comparators", _comparators),
    ("verdict", _rule),
    ("amendments", _amendments),
    ("labels", _labels),
    ("interpretation", _interpretation),
)


def _canonical(r: _Reading) -> dict[str, object]:
    """The form prereg.json freezes and the sha256 is taken of; optional tables only when set."""
    engine = (
        {
            "recipe": frozen_form(r.recipe, RECIPE, "recipe"),
            "platform": frozen_form(r.platform, PLATFORM, "platform"),
        }
        if r.engine
        else {}
    )
    canonical: dict[str, object] = {
        "run": r.run,
        **engine,
        "verdict": verdict_canonical(r.verdict_fields, r.verdict),
        "comparators": {n: _comparator_canonical(c) for n, c in sorted(r.comparators.items())},
        "amendments": [_amendment_canonical(a) for a in r.amendments],
        "gates": set_only(frozen_form(r.gates, GATES, "gates")),
        "interpretation": r.interpretation,
    }
    for key, part in _OPTIONAL:
        if (value := part(r)) is not None:
            canonical[key] = value
    return canonical


def _comparator_canonical(c: Comparator) -> dict[str, object]:
    return set_only(
        {k: getattr(c, k) for k in COMPARATOR if k not in ("bank", "group") or getattr(c, k)}
    )


def _amendment_canonical(a: Amendment) -> dict[str, object]:
    return set_only({k: getattr(a, k) for k in AMENDMENT if k != "to_step" or a.to_step})


def _labels_canonical(r: _Reading) -> object:
    return r.labels or None


def _source_canonical(r: _Reading) -> object:
    if r.source is None:
        return None
    every = {"eval_every": r.source_every} if r.source_every else {}
    return {**r.source.canonical(), **every}


def _babysit_canonical(r: _Reading) -> object:
    return babysit_canonical(r.babysit) or None


def _slurm_canonical(r: _Reading) -> object:
    return dict(r.slurm) if r.slurm["time"] else None


def _command_canonical(r: _Reading) -> object:
    return r.command.canonical() if r.command is not None else None


def _recovery_canonical(r: _Reading) -> object:
    # only when set: presets written before [recovery] keep their sha256
    return r.recovery.canonical() if r.recovery.enabled else None


# The canonical form's optional tables, in order: each part None when left out.
_OPTIONAL: tuple[tuple[str, Callable[[_Reading], object]], ...] = (
    ("labels", _labels_canonical),
    ("source", _source_canonical),
    ("babysit", _babysit_canonical),
    ("slurm", _slurm_canonical),
    ("command", _command_canonical),
    ("recovery", _recovery_canonical),
)


def _preset(r: _Reading) -> Preset:
    canonical = _canonical(r)
    freeze = MappingProxyType
    return Preset(
        name=r.path.stem,
        path=str(r.path),
        run=freeze(r.run),
        recipe=freeze(r.recipe),
        platform=freeze(r.platform),
        verdict=r.verdict,
        comparators=freeze(r.comparators),
        amendments=r.amendments,
        gates=freeze(r.gates),
        interpretation=freeze(r.interpretation),
        labels=freeze(r.labels),
        canonical=freeze(canonical),
        sha256=hashlib.sha256(canonical_bytes(canonical)).hexdigest(),
        source=r.source,
        babysit=freeze(r.babysit),
        slurm=freeze(r.slurm),
        notify=r.notify,
        stated_every=r.stated,
        command=r.command,
        recovery=r.recovery,
    )


def _command(path: Path, doc: dict) -> CommandSpec | None:
    """Check [command], which starts another trainer read through [source].

    So it comes with a [source] and without the engine's [recipe] and [platform]."""
    if "command" not in doc:
        return None
    command = read_command(doc["command"], path)
    if "source" not in doc:
        raise PresetError(
            path,
            "command",
            "expected a [source] too (how the command's log is "
            'read: kind = "hf_trainer", "tensorboard", ...)',
        )
    if engine := [k for k in ("recipe", "platform") if k in doc]:
        raise PresetError(
            path,
            engine[0],
            "a [command] preset starts its own trainer: "
            "[recipe] and [platform] (the engine's) do not apply; remove them",
        )
    return command


def _foreign_recipe(verdict: object, stated: int = 0) -> dict[str, object]:
    """The recipe a [source] preset stands on when it gives none.

    The probes come every `stated` steps ([source] eval_every), else at the multiples of the
    anchor and endpoint's greatest common divisor, the run ending at the endpoint (what the rules
    need of a recipe: when probes come, how long the run is). The divisor only places the steps
    the preset names; the decision lock never counts on it (Preset.stated_every)."""
    table = verdict if isinstance(verdict, dict) else {}
    anchor, end = table.get("anchor_step", 0), table.get("endpoint_step", 1)
    ints = [v for v in (anchor, end) if _positive_int(v)]
    every = stated or (math.gcd(*ints) if ints else 1)
    steps = end if _positive_int(end) else 1
    return {
        "model_size": "small",
        "batch_size": 1,
        "backward_chunks": 1,
        "steps": steps,
        "eval_every": every,
        "save_every": steps,
    }


def _positive_int(v: object) -> bool:
    """An integer above 0 (a bool is no integer here)."""
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def preset_from_canonical(data: Mapping[str, object], origin: str) -> Preset:
    """Rebuild a preset from its canonical form (as frozen in prereg.json)."""
    doc = json.loads(canonical_bytes(data))
    return validate(Path(origin), doc)
