"""Checkpoints: checkpoints/step-NNNNNN/{model.safetensors, optimizer.pt, stats.json, meta.json}.

Rank 0 writes into a hidden temp folder and renames it into place, so a folder named
step-NNNNNN is always complete; meta.json is written last and is the completeness mark.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from .stats import NormStats

FILES = ("model.safetensors", "optimizer.pt", "stats.json", "meta.json")


def step_dir(root: Path, step: int) -> Path:
    return root / f"step-{step:06d}"


def optimizer_state(optimizer) -> dict | None:
    """Full optimizer state on rank 0 (call on every rank: ZeRO-1 gathers shards)."""
    zero = sys.modules.get("torch.distributed.optim")  # imported where ranks build ZeRO-1
    if zero is not None and isinstance(optimizer, zero.ZeroRedundancyOptimizer):
        optimizer.consolidate_state_dict(to=0)
        if optimizer.global_rank != 0:
            return None
    return optimizer.state_dict()


class CheckpointError(RuntimeError):
    """A step folder is in the way and is not a checkpoint of this engine."""


def _discard(folder: Path) -> None:
    """Remove a checkpoint folder of ours: the file names save() writes, then the folder.

    The folder stays if anything else is in it.
    """
    for name in FILES:
        (folder / name).unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:
        pass


def save(
    root: Path, step: int, model: torch.nn.Module, opt_state: dict, stats: NormStats, meta: dict
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    final = step_dir(root, step)
    if final.exists() or final.is_symlink():
        # re-run after a resume: the old copy is replaced, but only a complete checkpoint
        # of this engine holding nothing else
        extra = (
            sorted(p.name for p in final.iterdir() if p.name not in FILES)
            if final.is_dir() and not final.is_symlink()
            else ["(not a folder)"]
        )
        if extra or not is_complete(final):
            raise CheckpointError(
                f"{final}: in the way and not a checkpoint of this engine "
                f"({', '.join(extra[:3]) or 'incomplete'}); left untouched"
            )
    tmp = Path(tempfile.mkdtemp(prefix=f".step-{step:06d}.tmp-", dir=root))
    placed = False
    try:
        tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
        save_file(tensors, str(tmp / "model.safetensors"))
        torch.save(opt_state, tmp / "optimizer.pt")
        stats.save(tmp / "stats.json")
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        if final.exists():
            old = Path(tempfile.mkdtemp(prefix=".old-", dir=root))
            os.replace(final, old / final.name)
            _discard(old / final.name)
            with contextlib.suppress(OSError):
                old.rmdir()
        os.replace(tmp, final)  # fails, rather than replaces, if a folder appeared there
        placed = True
        return final
    finally:
        if not placed:
            _discard(tmp)


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
    found = sorted(
        (p for p in root.glob("step-*") if p.name[5:].isdigit()),
        key=lambda p: int(p.name[5:]),
        reverse=True,
    )
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
