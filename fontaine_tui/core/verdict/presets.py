"""Presets: a pre-registration as strictly validated TOML, with a canonical form and its hash."""

from __future__ import annotations

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
from typing import Any, TypedDict, TypeVar, cast

from fontaine_tui.core import tomlfile
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.source import SourceSpec, read_spec
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.verdict.checks import (
    LABELS,
    NUMBER,
    REQUIRED,
    PresetError,
    Scalar,
    Spec,
    canonical_bytes,
    check_section,
    choice,
    positive,
    set_only,
)
from fontaine_tui.core.verdict.command import CommandSpec, read_command
from fontaine_tui.core.verdict.shape import (
    VERDICT,
    Comparator,
    VerdictSpec,
    check_labels,
    check_placeholders,
    verdict_canonical,
    verdict_spec,
)
from fontaine_tui.core.verdict.watching import (
    NotifySpec,
    babysit_canonical,
    babysit_section,
    notify_section,
    slurm_section,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

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
    "micro_batch": (int, 0),  # per-rank micro-batch; 0: backward_chunks says how to cut
    "datasets": (str, ""),  # sub-datasets trained on, "demos,rig"; "": all of them
}
PLATFORM: Spec = {
    "nproc": (int, 1),  # ranks per node
    "device": (str, "auto"),
    "num_workers": (int, 2),
    "prefetch_factor": (int, 2),
    "data_dir": (str, ""),
    "precision": (str, "fp32"),
    "activation_checkpointing": (bool, False),
    "compile": (bool, False),
    "nnodes": (int, 1),
    "node_rank": (int, 0),
    "rdzv_endpoint": (str, ""),  # HOST:PORT of the c10d rendezvous, with nnodes > 1
    "rdzv_id": (str, ""),  # the rendezvous id ("": the run's name)
}
# Keys added to [recipe] and [platform] after presets were first frozen into prereg.json:
# at their default they stay out of the canonical form, so a pre-registration frozen before
# the key existed keeps its sha256 (and reads the same as the preset it was frozen from).
LATER_KEYS = {
    "recipe": ("micro_batch", "datasets"),
    "platform": (
        "precision",
        "activation_checkpointing",
        "compile",
        "nnodes",
        "node_rank",
        "rdzv_endpoint",
        "rdzv_id",
    ),
}
COMPARATOR: Spec = {
    "delta": (NUMBER, math.nan),  # typed in, or computed from the banked run (`bank`)
    "bank": (str, ""),  # "NAME" or "NAME@sha256-prefix": a run in the comparator bank
    "group": (str, ""),  # drawn with the others of its group as a min-max envelope
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
    micro_batch: int
    datasets: str


class PlatformFields(TypedDict):
    nproc: int
    device: str
    num_workers: int
    prefetch_factor: int
    data_dir: str
    precision: str
    activation_checkpointing: bool
    compile: bool
    nnodes: int
    node_rank: int
    rdzv_endpoint: str
    rdzv_id: str


SECTIONS = (
    "run",
    "recipe",
    "platform",
    "verdict",
    "comparators",
    "amendments",
    "gates",
    "labels",
    "interpretation",
    "source",
    "babysit",
    "notify",
    "slurm",
    "command",
)
MODEL_SIZES = ("tiny", "small", "base")
OBJECTIVES = ("joint", "ar", "flow")
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("fp32", "bf16")
INITS = ("inherit", "random")


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
    source: SourceSpec | None = None  # [source]: a run trained elsewhere, and how to read it
    babysit: Mapping[str, Scalar] = field(default_factory=dict)  # [babysit] (watching.py)
    notify: tuple[NotifySpec, ...] = ()  # [[notify]]: never in the canonical form
    slurm: Mapping[str, Scalar] = field(default_factory=dict)  # [slurm] (watching.py)
    # the probe cadence the preset states and its key ([recipe] or [source] eval_every);
    # None: a [source] preset that states none (its recipe's eval_every is only a default)
    stated_every: tuple[int, str] | None = None
    command: CommandSpec | None = None  # [command]: the user's own trainer, launched

    @property
    def foreign(self) -> bool:
        """The preset reads a run another trainer writes ([source] of a foreign kind): it has
        no engine recipe, and its run is read through [source] (launched by its [command],
        or trained elsewhere)."""
        return self.source is not None and self.source.kind != "fontaine"

    @property
    def launchable(self) -> bool:
        """`launch` can start its run: the engine's [recipe], or the user's [command]."""
        return self.command is not None or not self.foreign

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


def gate_of(gates: Mapping[str, object], key: str) -> float | None:
    """A [gates] number, or None where it is not a finite one (an unset inf/nan default)."""
    value = gates.get(key)
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _validate(path: Path, doc: dict) -> Preset:
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
        path, "verdict", {k: v for k, v in verdict_table.items() if k != "secondary"}, VERDICT
    )
    gates = check_section(path, "gates", doc.get("gates", {}), GATES)
    babysit = babysit_section(path, doc.get("babysit"))
    notify = notify_section(path, doc.get("notify", []))
    slurm = slurm_section(path, doc.get("slurm"))
    # The same tables key by key: _check_section held each value to its spec row, which
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
    comparators = _comparators(path, doc.get("comparators", {}), every, verdict_fields)
    verdict = verdict_spec(path, verdict_fields, comparators, every, rec["steps"], secondary)

    amendments = _amendments(path, doc.get("amendments", []), comparators, verdict, every)

    labels = check_labels(path, doc.get("labels", {}))
    by_label = {text: cls for cls, text in labels.items()}
    interp = doc.get("interpretation", {})
    if not isinstance(interp, dict):
        raise PresetError(path, "interpretation", "expected a table")
    interpretation: dict[str, str] = {}
    for key, value in interp.items():
        cls = by_label.get(key, key if key not in by_label.values() else "")
        if cls not in LABELS:
            names = [labels.get(c, c) for c in LABELS]
            raise PresetError(
                path, f"interpretation.{key}", f"unknown key (expected one of: {', '.join(names)})"
            )
        if not isinstance(value, str):
            raise PresetError(path, f"interpretation.{key}", "expected a string")
        interpretation[cls] = " ".join(value.split())

    canonical = {
        "run": run,
        **(
            {
                "recipe": _frozen_form(recipe, RECIPE, "recipe"),
                "platform": _frozen_form(platform, PLATFORM, "platform"),
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
        "gates": set_only(gates),
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
    )


def _command(path: Path, doc: dict) -> CommandSpec | None:
    """[command], checked: it starts another trainer, read through [source], so it comes
    with a [source] and without the engine's [recipe] and [platform]."""
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


def world_size(platform: Mapping[str, object]) -> int:
    """Ranks across the nodes: platform.nproc (per node) x platform.nnodes."""
    return int(cast(int, platform["nproc"])) * int(cast(int, platform.get("nnodes", 1)))


def layout(
    path: str | Path, recipe: Mapping[str, object], platform: Mapping[str, object]
) -> tuple[int, int]:
    """(backward chunks per rank, per-rank micro-batch), the engine's rule
    (engine/pipeline.py chunks_per_rank): with micro_batch stated, chunks = batch_size /
    (micro_batch x world size), and backward_chunks must be that number unless left at its
    default 1; without it, backward_chunks x world size must divide batch_size."""
    batch, chunks = int(cast(int, recipe["batch_size"])), int(cast(int, recipe["backward_chunks"]))
    micro, world = int(cast(int, recipe.get("micro_batch", 0))), world_size(platform)
    ranks = "platform.nproc" + (" x platform.nnodes" if world != platform["nproc"] else "")
    if micro:
        per_rank, rest = divmod(batch, micro * world)
        if rest or per_rank < 1:
            raise PresetError(
                path,
                "recipe.batch_size",
                f"expected a multiple of micro_batch x {ranks} = {micro * world}, got {batch}",
            )
        if chunks not in (1, per_rank):
            raise PresetError(
                path,
                "recipe.backward_chunks",
                f"expected {per_rank} (batch_size {batch} / (micro_batch {micro} x "
                f"{ranks} {world})) or left out, got {chunks}",
            )
        return per_rank, micro
    if batch % (chunks * world):
        raise PresetError(
            path,
            "recipe.batch_size",
            f"expected a multiple of backward_chunks x {ranks} = {chunks * world}, "
            f"got {batch}; or state the per-rank micro-batch (micro_batch)",
        )
    return chunks, batch // chunks // world


def _frozen_form(table: Mapping[str, Scalar], spec: Spec, section: str) -> dict[str, Scalar]:
    """The section as hashed: a LATER_KEYS key enters only when set away from its default."""
    later = LATER_KEYS[section]
    return {k: v for k, v in table.items() if k not in later or v != spec[k][1]}


def _foreign_recipe(verdict: object, stated: int = 0) -> dict[str, object]:
    """The recipe a [source] preset stands on when it gives none: the probes every `stated`
    steps ([source] eval_every), else at the multiples of the anchor and endpoint's greatest
    common divisor, the run ending at the endpoint (what the rules need of a recipe: when
    probes come, how long the run is). The divisor only places the steps the preset names;
    the decision lock never counts on it (Preset.stated_every)."""
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


_T = TypeVar("_T")


def _made(cls: type[_T], fields: Mapping[str, Scalar], **more: object) -> _T:
    """A section's dataclass from what _check_section returned: each value already has its
    spec row's type, which mypy cannot follow from the Spec tables (hence the one cast)."""
    return cls(**more, **cast(dict[str, Any], fields))


def _comparators(
    path: Path, table: object, every: int, rule: Mapping[str, Scalar]
) -> dict[str, Comparator]:
    if not isinstance(table, dict):
        raise PresetError(path, "comparators", "expected [comparators.NAME] tables")
    out: dict[str, Comparator] = {}
    for name, body in table.items():
        fields = check_section(path, f"comparators.{name}", body, COMPARATOR)
        if fields["bank"]:
            c = _banked(path, name, fields, rule)
        elif not math.isfinite(float(fields["delta"])):
            raise PresetError(
                path,
                f"comparators.{name}.delta",
                'missing; expected a number, or bank = "NAME" (a banked run)',
            )
        else:
            c = _made(Comparator, fields, name=name)
        if c.level_step and c.level_step % every:
            raise PresetError(
                path,
                f"comparators.{name}.level_step",
                f"expected a multiple of recipe.eval_every = {every}",
            )
        out[name] = c
    return out


def _banked(
    path: Path, name: str, fields: Mapping[str, Scalar], rule: Mapping[str, Scalar]
) -> Comparator:
    """A comparator from the bank: its delta (or level) read from the banked run's curve as
    the preset's rule reads this run, pinned to the banked version's sha256. A frozen preset
    (prereg.json) carries the numbers and the full sha256, so it reads where the bank is
    not; where the bank is, the numbers must be the banked run's."""
    from fontaine_tui.core.bank import store as bank

    where = f"comparators.{name}"
    ref, delta = str(fields["bank"]), float(fields["delta"])
    pinned = re.fullmatch(r"[^@]+@[0-9a-f]{64}", ref) is not None
    metric, read = str(rule["metric"]), str(rule["read"])
    anchor, endpoint = int(rule["anchor_step"]), int(rule["endpoint_step"])
    try:
        entry = bank.get(ref)
    except InputError as exc:
        if pinned and math.isfinite(delta):  # frozen form, read without the bank
            return _made(
                Comparator,
                {k: v for k, v in fields.items() if k != "bank"},
                name=name,
                bank=ref,
                where="banked run (its bank entry is not here)",
            )
        raise PresetError(path, f"{where}.bank", f"{exc}") from None
    if entry.marked:  # banked at the user's word although its own evidence conflicts
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
    end = entry.value(endpoint, metric)
    start = entry.value(anchor, metric) if read == "delta" else 0.0
    if not (math.isfinite(end) and math.isfinite(start)):
        step = endpoint if not math.isfinite(end) else anchor
        raise PresetError(
            path,
            f"{where}.bank",
            f"the banked run {entry.name} has no {metric} at step {step} "
            f"(its probes: {', '.join(map(str, entry.probes())) or 'none'})",
        )
    computed = end - start
    if math.isfinite(delta) and abs(delta - computed) > 1e-9:
        raise PresetError(
            path,
            f"{where}.delta",
            f"expected the banked run's {computed!r} ({entry.name}@{entry.sha256[:12]}), "
            f"got {delta!r}",
        )
    level_step = int(fields["level_step"])
    levels = {
        "eval_level": float(fields["eval_level"]),
        "train_level": float(fields["train_level"]),
    }
    if level_step:
        for key, field_ in (("eval_level", metric), ("train_level", "train_chunk_mae")):
            if not math.isfinite(levels[key]):
                levels[key] = entry.value(level_step, field_)
    return Comparator(
        name,
        computed,
        level_step,
        levels["eval_level"],
        levels["train_level"],
        str(fields["description"]) or str(entry.doc.get("note") or ""),
        entry.ref,
        str(fields["group"]),
        entry.where(),
    )


def _amendments(
    path: Path, items: object, comparators: Mapping[str, Comparator], spec: VerdictSpec, every: int
) -> tuple[Amendment, ...]:
    if not isinstance(items, list):
        raise PresetError(path, "amendments", "expected an array of [[amendments]] tables")
    out: list[Amendment] = []
    for i, body in enumerate(items):
        where = f"amendments[{i}]"
        fields = check_section(path, where, body, AMENDMENT)
        am = _made(Amendment, fields)
        if am.id in {a.id for a in out}:
            raise PresetError(path, f"{where}.id", f"expected a unique id, got {am.id} twice")
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


# -- finding and loading --------------------------------------------------------------------


def preset_dirs() -> list[Path]:
    """Where preset names are looked up, first match wins: FONTAINE_PRESETS, ./presets, the
    checkout's presets/ beside fontaine_tui/, and the copy installed with the package
    (fontaine_tui/presets, from the same presets/ folder: setup.py)."""
    dirs = []
    if env := os.environ.get("FONTAINE_PRESETS"):
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
    dirs.append(Path.cwd() / "presets")
    package = Path(__file__).resolve().parents[2]
    dirs.append(package.parent / "presets")
    dirs.append(package / "presets")
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
        if not candidate.exists():  # a pipe or a folder: refused when read
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
        raw = read_whole(path)
    except OSError as exc:
        raise PresetError(path, "file", f"cannot read ({exc.strerror})") from None
    try:
        doc = tomlfile.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise PresetError(path, "file", "expected UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise PresetError(path, "toml", f"expected valid TOML ({exc})") from None
    return _validate(path, doc)


def preset_from_canonical(data: Mapping[str, object], origin: str) -> Preset:
    """Rebuild a preset from its canonical form (as frozen in prereg.json)."""
    doc = json.loads(canonical_bytes(data))
    return _validate(Path(origin), doc)
