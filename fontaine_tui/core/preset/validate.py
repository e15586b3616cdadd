"""A preset document held to its rules.

Every section is checked, the first thing wrong gives one `file: key: expected` line, and a
valid document gives the Preset with its canonical form and sha256."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import cast

from fontaine_tui.core.log.formats.source import read_spec
from fontaine_tui.core.preset.amendments import read_amendments
from fontaine_tui.core.preset.checks import (
    LABELS,
    PresetError,
    canonical_bytes,
    check_section,
    choice,
    positive,
    set_only,
)
from fontaine_tui.core.preset.command import CommandSpec, read_command
from fontaine_tui.core.preset.comparators import read_comparators
from fontaine_tui.core.preset.delta import read_delta_keys
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.preset.recovery import read_recovery
from fontaine_tui.core.preset.rule import (
    VERDICT,
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
    babysit_canonical,
    babysit_section,
    notify_section,
    slurm_section,
)


def validate(path: Path, doc: dict) -> Preset:
    """The Preset a parsed document makes, or a PresetError naming the first key wrong."""
    for key in doc:
        if key not in SECTIONS:
            raise PresetError(
                path, key, f"unknown section (expected one of: {', '.join(SECTIONS)})"
            )
    check_placeholders(path, doc.get("verdict"))
    source, source_every = None, 0
    if "source" in doc:
        table = doc["source"]
        if isinstance(table, dict) and "eval_every" in table:  # the cadence, for the lock
            table = {k: v for k, v in table.items() if k != "eval_every"}
            source_every = doc["source"]["eval_every"]
            if not (type(source_every) is int and source_every > 0):
                raise PresetError(
                    path,
                    "source.eval_every",
                    f"expected a positive integer (the steps from one probe "
                    f"to the next), got {source_every!r}",
                )
        try:
            source = read_spec(table)
        except ValueError as exc:
            raise PresetError(path, exc.args[0], exc.args[1]) from None
    command = _command(path, doc)
    foreign = source is not None and (source.kind != "fontaine" or command is not None)
    for key in ("run", "verdict") if foreign else ("run", "recipe", "platform", "verdict"):
        if key not in doc:
            raise PresetError(path, key, "missing section")
    engine = not foreign or "recipe" in doc or "platform" in doc  # an engine recipe given
    if foreign:  # no engine recipe: the run is another trainer's
        doc.setdefault("recipe", _foreign_recipe(doc["verdict"], source_every))
        doc.setdefault("platform", {})
        if command is None:  # trained elsewhere; a command's run needs its folder
            doc["run"] = (
                {"output_dir": "", **doc["run"]} if isinstance(doc["run"], dict) else doc["run"]
            )
    run = check_section(path, "run", doc["run"], RUN)
    recipe = check_section(path, "recipe", doc["recipe"], RECIPE)
    platform = check_section(path, "platform", doc["platform"], PLATFORM)
    verdict_table = doc["verdict"]
    if not isinstance(verdict_table, dict):
        raise PresetError(path, "verdict", "expected a table")
    secondary = verdict_table.get("secondary", [])
    verdict_fields = check_section(
        path,
        "verdict",
        {k: v for k, v in verdict_table.items() if k not in ("secondary", "delta_keys")},
        VERDICT,
    )
    gates = check_section(path, "gates", doc.get("gates", {}), GATES)
    babysit = babysit_section(path, doc.get("babysit"))
    notify = notify_section(path, doc.get("notify", []))
    slurm = slurm_section(path, doc.get("slurm"))
    recovery = read_recovery(path, doc.get("recovery"))
    if recovery.enabled and command is not None and not command.resume_argv:
        raise PresetError(
            path,
            "recovery.max_restarts",
            "expected [command] resume_argv too (a restart resumes the run), or 0",
        )
    # The same tables key by key: check_section held each value to its spec row, which
    # mypy cannot follow from the Spec tables themselves.
    rec, plat = cast(RecipeFields, recipe), cast(PlatformFields, platform)

    if not run["name"]:
        raise PresetError(path, "run.name", "expected a non-empty string")
    choice(path, "recipe.model_size", rec["model_size"], MODEL_SIZES)
    choice(path, "recipe.objective", rec["objective"], OBJECTIVES)
    choice(path, "recipe.flow_decoder_init", rec["flow_decoder_init"], INITS)
    choice(path, "platform.device", plat["device"], DEVICES)
    choice(path, "platform.precision", plat["precision"], PRECISIONS)
    for knob in ("batch_size", "backward_chunks", "steps", "eval_every", "save_every"):
        positive(path, f"recipe.{knob}", rec[knob])
    positive(path, "platform.nproc", plat["nproc"])
    positive(path, "platform.eval_batch", plat["eval_batch"])
    positive(path, "platform.nnodes", plat["nnodes"])
    if plat["node_rank"] >= plat["nnodes"]:
        raise PresetError(
            path,
            "platform.node_rank",
            f"expected an integer below platform.nnodes = {plat['nnodes']}, "
            f"got {plat['node_rank']}",
        )
    if plat["nnodes"] > 1 and not re.fullmatch(r"\S+:\d+", plat["rdzv_endpoint"]):
        raise PresetError(
            path,
            "platform.rdzv_endpoint",
            f"expected HOST:PORT of the rendezvous with platform.nnodes = "
            f"{plat['nnodes']}, got {plat['rdzv_endpoint']!r}",
        )
    positive(path, "platform.num_workers", plat["num_workers"], 0)
    positive(path, "platform.prefetch_factor", plat["prefetch_factor"])
    if not 0.0 <= rec["image_augment"] <= 1.0:
        raise PresetError(
            path,
            "recipe.image_augment",
            f"expected a probability in [0, 1], got {rec['image_augment']}",
        )
    if rec["lr"] <= 0:
        raise PresetError(path, "recipe.lr", f"expected a positive number, got {rec['lr']}")
    layout(path, rec, plat)

    every = rec["eval_every"]
    if engine and source_every and source_every != every:
        raise PresetError(
            path,
            "source.eval_every",
            f"expected recipe.eval_every = {every} or left out, got {source_every}",
        )
    stated = (
        (every, "recipe.eval_every")
        if engine
        else (source_every, "source.eval_every")
        if source_every
        else None
    )
    comparators = read_comparators(path, doc.get("comparators", {}), every, verdict_fields, source)
    verdict = verdict_spec(path, verdict_fields, comparators, every, rec["steps"], secondary)
    delta_keys = read_delta_keys(
        path, verdict_table.get("delta_keys"), comparators, verdict.reference, engine
    )
    verdict = dataclasses.replace(verdict, delta_keys=delta_keys)
    check_seed_group(path, verdict.seed_group, comparators)

    amendments = read_amendments(path, doc.get("amendments", []), comparators, verdict, every)

    labels = check_labels(path, doc.get("labels", {}))
    by_label = {text: cls for cls, text in labels.items()}
    interp = doc.get("interpretation", {})
    if not isinstance(interp, dict):
        raise PresetError(path, "interpretation", "expected a table")
    interpretation: dict[str, str] = {}
    for key, value in interp.items():
        # a label names its class, and so does the class's own name: prereg.json freezes the
        # table keyed by class (no label is another class's name: check_labels)
        cls = by_label.get(key, key)
        if cls not in LABELS:
            names = [labels.get(c, c) for c in LABELS]
            raise PresetError(
                path, f"interpretation.{key}", f"unknown key (expected one of: {', '.join(names)})"
            )
        if not isinstance(value, str):
            raise PresetError(path, f"interpretation.{key}", "expected a string")
        if cls in interpretation:
            raise PresetError(
                path,
                f"interpretation.{key}",
                f"expected each class once, got {cls} under both its name and its label",
            )
        interpretation[cls] = " ".join(value.split())

    canonical = {
        "run": run,
        **(
            {
                "recipe": frozen_form(recipe, RECIPE, "recipe"),
                "platform": frozen_form(platform, PLATFORM, "platform"),
            }
            if engine
            else {}
        ),
        "verdict": verdict_canonical(verdict_fields, verdict),
        "comparators": {
            n: set_only(
                {
                    k: getattr(c, k)
                    for k in COMPARATOR
                    if k not in ("bank", "group") or getattr(c, k)
                }
            )
            for n, c in sorted(comparators.items())
        },
        "amendments": [
            set_only({k: getattr(a, k) for k in AMENDMENT if k != "to_step" or a.to_step})
            for a in amendments
        ],
        "gates": set_only(frozen_form(gates, GATES, "gates")),
        "interpretation": interpretation,
        **({"labels": labels} if labels else {}),
        **(
            {
                "source": {
                    **source.canonical(),
                    **({"eval_every": source_every} if source_every else {}),
                }
            }
            if source is not None
            else {}
        ),
        **({"babysit": b} if (b := babysit_canonical(babysit)) else {}),
        **({"slurm": dict(slurm)} if slurm["time"] else {}),
        **({"command": command.canonical()} if command is not None else {}),
        # only when set: presets written before [recovery] keep their sha256
        **({"recovery": recovery.canonical()} if recovery.enabled else {}),
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
        source=source,
        babysit=freeze(babysit),
        slurm=freeze(slurm),
        notify=notify,
        stated_every=stated,
        command=command,
        recovery=recovery,
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
    anchor = verdict.get("anchor_step", 0) if isinstance(verdict, dict) else 0
    end = verdict.get("endpoint_step", 1) if isinstance(verdict, dict) else 1
    ints = [v for v in (anchor, end) if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    every = stated or (math.gcd(*ints) if ints else 1)
    steps = end if isinstance(end, int) and not isinstance(end, bool) and end > 0 else 1
    return {
        "model_size": "small",
        "batch_size": 1,
        "backward_chunks": 1,
        "steps": steps,
        "eval_every": every,
        "save_every": steps,
    }


def preset_from_canonical(data: Mapping[str, object], origin: str) -> Preset:
    """Rebuild a preset from its canonical form (as frozen in prereg.json)."""
    doc = json.loads(canonical_bytes(data))
    return validate(Path(origin), doc)
