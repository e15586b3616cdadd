"""The engine's command line from a preset: its argv, its run folder and what it says it is.

[recipe] and [platform] go 1:1 into `python -m fontaine_engine train` flags (through
torch.distributed.run for several ranks); `engine_identity` asks the same interpreter what
code and data the run uses, for prereg.json.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from fontaine_tui.core.childenv import child_env
from fontaine_tui.core.enginename import ENGINE_MODULE
from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.preset.sections import LATER_KEYS, PLATFORM, RECIPE

# recipe/platform key -> engine flag, in the engine's argv order
RECIPE_FLAGS = (
    "model_size",
    "batch_size",
    "backward_chunks",
    "seed",
    "image_augment",
    "recompute_stats",
    "objective",
    "insulate_flow",
    "flow_decoder_init",
    "init",
    "lr",
    "warmup_steps",
    "steps",
    "eval_every",
    "eval_dataset_breakdown",
    "save_every",
    "chunk_grad_allreduce",
    "micro_batch",
    "datasets",
    "probe_at_start",
    "cameras",
    "task_tokens",
    "history",
)
PLATFORM_FLAGS = (
    "num_workers",
    "prefetch_factor",
    "device",
    "precision",
    "activation_checkpointing",
    "compile",
    "eval_batch",
)


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def _value(value: object) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def run_dir(preset: Preset, output_dir: str | Path | None = None, cwd: Path | None = None) -> Path:
    """The run folder: --output-dir, else the preset's run.output_dir, against the cwd."""
    target = Path(output_dir) if output_dir else Path(str(preset.run["output_dir"]))
    return (cwd or Path.cwd()) / target if not target.is_absolute() else target


def build_argv(
    preset: Preset,
    folder: Path,
    resume: bool = False,
    python: str = sys.executable,
    extend_to: int = 0,
) -> list[str]:
    """The engine command, built 1:1 from [recipe] and [platform].

    Booleans are flags present or absent, empty strings are omitted, and so is a key added later
    (presets.LATER_KEYS) at its default (the engine's default is the same). More than one rank
    (nproc per node x nnodes) goes through torch.distributed.run, with nnodes > 1 over a c10d
    rendezvous. A resume whose endpoint in force (`extend_to`) is past the recipe's steps adds
    the engine's `--extend-to N`: the same --steps (its schedule ends there, then holds its
    floor), trained on to N, with a probe and checkpoint at N."""
    argv = [
        *_launcher(preset, python),
        ENGINE_MODULE,
        "train",
        "--run-name",
        preset.run_name,
        "--output-dir",
        str(folder),
    ]
    data_dir = str(preset.platform["data_dir"])
    if data_dir:
        argv += ["--data-dir", data_dir]
    later = _later_defaults()
    argv += [f for key in RECIPE_FLAGS for f in _key_flags(preset.recipe, key, later)]
    argv += [f for key in PLATFORM_FLAGS for f in _key_flags(preset.platform, key, later)]
    if resume:
        argv.append("--resume")
        if extend_to > int(preset.recipe["steps"]):
            argv += ["--extend-to", str(extend_to)]
    return argv


def _launcher(preset: Preset, python: str) -> list[str]:
    """`python -m`, through torch.distributed.run for more than one rank (c10d across nodes)."""
    plat = preset.platform
    nproc, nnodes = int(plat["nproc"]), int(plat.get("nnodes", 1))
    if nproc <= 1 and nnodes <= 1:
        return [python, "-m"]
    head = [python, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc)]
    if nnodes > 1:
        head += [
            "--nnodes",
            str(nnodes),
            "--node-rank",
            str(plat["node_rank"]),
            "--rdzv-backend",
            "c10d",
            "--rdzv-endpoint",
            str(plat["rdzv_endpoint"]),
            "--rdzv-id",
            str(plat["rdzv_id"]) or preset.run_name,
        ]
    return [*head, "-m"]


def _later_defaults() -> dict[str, object]:
    """Each key added later (presets.LATER_KEYS) and its default, the engine's own."""
    return {
        k: spec[k][1]
        for spec, keys in ((RECIPE, LATER_KEYS["recipe"]), (PLATFORM, LATER_KEYS["platform"]))
        for k in keys
    }


def _key_flags(table: Mapping[str, object], key: str, later: Mapping[str, object]) -> list[str]:
    """One [recipe] or [platform] key as the engine's flags ([] where it is left out).

    A key added later is left out at its default, as backward_chunks 1 is with a micro_batch
    (the engine derives it); a boolean is a flag present or absent, an empty string nothing."""
    value = table.get(key, later.get(key, ""))
    if key in later and value == later[key]:
        return []
    if key == "backward_chunks" and table.get("micro_batch") and value == 1:
        return []
    if isinstance(value, bool):
        return [_flag(key)] if value else []
    return [] if value == "" else [_flag(key), _value(value)]


def engine_identity(argv: list[str], timeout: float = 60) -> dict[str, object]:
    """What the engine of `argv` says it is and reads, for prereg.json.

    The engine is named by its interpreter and --data-dir, and asked with
    `python -m fontaine_engine identity`. {"error": why} when it cannot say: the launch goes
    on, and the run's provenance is the engine's own meta record alone."""

    cmd = [argv[0], "-m", ENGINE_MODULE, "identity"]
    if "--data-dir" in argv:
        cmd += ["--data-dir", argv[argv.index("--data-dir") + 1]]
    try:
        res = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            env=child_env(),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"python -m fontaine_engine identity: {exc}"}
    last = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
    if res.returncode != 0:
        return {"error": f"python -m fontaine_engine identity: {last}"}
    try:
        doc = json_loads(res.stdout)
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        return {"error": "python -m fontaine_engine identity: expected one JSON object"}
    return doc
