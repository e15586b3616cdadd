"""A preset's engine sections: their keys, the choices they take and the rank layout.

[run], [recipe], [platform], [comparators], [[amendments]] and [gates] as spec tables, the
choices they take, the keys added after the first presets, and the rank layout [recipe] and
[platform] must describe together."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict, cast

from fontaine_tui.core.preset.checks import NUMBER, REQUIRED, PresetError, Scalar, Spec

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
    "probe_at_start": (bool, False),  # an eval probe at step 0, before any update
    "cameras": (str, ""),  # camera features read, in order, "a,b"; "": all, info.json's order
    "task_tokens": (int, 48),  # the task text's language tokens at most; 0: none
    "history": (int, 0),  # past frames and states each sample also sees
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
    "eval_batch": (int, 64),  # frames per eval forward pass (memory only)
}
# Keys added to [recipe], [platform] and [gates] after presets were first frozen into prereg.json:
# at their default they stay out of the canonical form, so a pre-registration frozen before
# the key existed keeps its sha256 (and reads the same as the preset it was frozen from).
LATER_KEYS = {
    "recipe": ("micro_batch", "datasets", "probe_at_start", "cameras", "task_tokens", "history"),
    "platform": (
        "precision",
        "activation_checkpointing",
        "compile",
        "nnodes",
        "node_rank",
        "rdzv_endpoint",
        "rdzv_id",
        "eval_batch",
    ),
    "gates": ("stop_on_lock",),
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
    # stop the run, with a checkpoint, once the decision locks or the GPU-hours gate is reached
    "stop_on_lock": (bool, False),
}


# recipe and platform key by key, as check_section leaves them (NUMBER -> float); the
# Preset keeps them as mappings. The other sections become dataclasses (checks.made).


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
    probe_at_start: bool
    cameras: str
    task_tokens: int
    history: int


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
    eval_batch: int


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
    "recovery",
)
MODEL_SIZES = ("tiny", "small", "base", "large")
OBJECTIVES = ("joint", "ar", "flow")
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("fp32", "tf32", "bf16")
INITS = ("inherit", "random")


def world_size(platform: Mapping[str, object]) -> int:
    """Ranks across the nodes: platform.nproc (per node) x platform.nnodes."""
    return int(cast(int, platform["nproc"])) * int(cast(int, platform.get("nnodes", 1)))


def layout(
    path: str | Path, recipe: Mapping[str, object], platform: Mapping[str, object]
) -> tuple[int, int]:
    """The (backward chunks per rank, per-rank micro-batch) of a preset, by the engine's rule.

    The rule is engine/pipeline.py's chunks_per_rank. With micro_batch stated, chunks =
    batch_size / (micro_batch x world size), and backward_chunks must be that number unless left
    at its default 1. Without it, backward_chunks x world size must divide batch_size."""
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


def frozen_form(table: Mapping[str, Scalar], spec: Spec, section: str) -> dict[str, Scalar]:
    """The section as hashed: a LATER_KEYS key enters only when set away from its default."""
    later = LATER_KEYS[section]
    return {k: v for k, v in table.items() if k not in later or v != spec[k][1]}
