"""Checkpoints: checkpoints/step-NNNNNN/{model.safetensors, optimizer.pt, stats.json, meta.json}.

Rank 0 writes into a hidden temp folder and renames it into place, so a folder named
step-NNNNNN is always complete; meta.json is written last and is the completeness mark.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch.distributed.optim import ZeroRedundancyOptimizer

from engine.stats import NormStats

FILES = ("model.safetensors", "optimizer.pt", "stats.json", "meta.json")


def step_dir(root: Path, step: int) -> Path:
    return root / f"step-{step:06d}"


def optimizer_state(optimizer) -> dict | None:
    """Full optimizer state on rank 0 (call on every rank: ZeRO-1 gathers shards)."""
    if isinstance(optimizer, ZeroRedundancyOptimizer):
        optimizer.consolidate_state_dict(to=0)
        if optimizer.global_rank != 0:
            return None
    return optimizer.state_dict()


def save(root: Path, step: int, model: torch.nn.Module, opt_state: dict, stats: NormStats,
         meta: dict) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".step-{step:06d}.tmp-", dir=root))
    try:
        tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
        save_file(tensors, str(tmp / "model.safetensors"))
        torch.save(opt_state, tmp / "optimizer.pt")
        stats.save(tmp / "stats.json")
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        final = step_dir(root, step)
        if final.exists():  # re-run after a resume: replace the old copy
            trash = Path(tempfile.mkdtemp(prefix=".trash-", dir=root))
            os.replace(final, trash / final.name)
            shutil.rmtree(trash, ignore_errors=True)
        os.replace(tmp, final)
        return final
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def is_complete(path: Path) -> bool:
    try:
        meta = json.loads((path / "meta.json").read_text())
        return all((path / f).is_file() for f in FILES) and isinstance(meta.get("step"), int)
    except (OSError, ValueError):
        return False


def latest(root: Path) -> Path | None:
    """Newest complete step-NNNNNN folder under root."""
    if not root.is_dir():
        return None
    found = sorted((p for p in root.glob("step-*") if p.name[5:].isdigit()),
                   key=lambda p: int(p.name[5:]), reverse=True)
    return next((p for p in found if is_complete(p)), None)


def resolve(path: Path) -> Path:
    """A checkpoint folder, or a run folder / checkpoints folder holding some."""
    if (path / "model.safetensors").is_file():
        return path
    for root in (path / "checkpoints", path):
        found = latest(root)
        if found is not None:
            return found
    raise FileNotFoundError(f"no complete checkpoint under {path}")


def load_meta(path: Path) -> dict:
    return json.loads((path / "meta.json").read_text())


def load_weights(path: Path, model: torch.nn.Module, skip_prefix: str | None = None) -> None:
    state = load_file(str(path / "model.safetensors"))
    if skip_prefix:
        own = model.state_dict()
        state = {k: (own[k] if k.startswith(skip_prefix) else v) for k, v in state.items()}
    model.load_state_dict(state, strict=True)


def load_optimizer(path: Path) -> dict:
    return torch.load(path / "optimizer.pt", map_location="cpu", weights_only=False)
