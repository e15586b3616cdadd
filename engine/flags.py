"""The flag checks the engine's commands share: `train` and `score` refuse alike.

`train` (engine/cli.py) and `score` (engine/score.py, engine/surface.py) refuse a bad
invocation with the same one-line UsageExit, which engine/cli.py prints as
`engine: error: ...` with exit code 2.

A leaf module: it imports no other engine module at import time, so cli imports score and
surface, and they import this, never cli.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path


class UsageExit(Exception):
    """Carries the one-line message of a bad invocation."""


class UsageError(Exception):
    """A flag that cannot work; reported as one line and exit code 2."""


def check_writable(flag: str, path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".probe-"):
            pass
    except OSError as exc:
        raise UsageExit(
            f"{flag} {path}: not a writable directory ({exc.strerror or exc})"
        ) from None


def check_gpus(device: str, env: Mapping[str, str], available: bool, count: int) -> None:
    """Check that a CUDA run has a GPU per rank on this node.

    The ranks counted are the local world size (torchrun's LOCAL_WORLD_SIZE, else WORLD_SIZE),
    not the world across nodes.
    """
    from .distributed import local_world_size

    if device == "cuda" and not available:
        raise UsageExit(
            "--device cuda: CUDA is not available on this machine (expected auto or cpu)"
        )
    local = local_world_size(env)
    if (device == "cuda" or (device == "auto" and available)) and local > count:
        raise UsageExit(
            f"--device {device}: local world size {local} (ranks on this node) "
            f"exceeds the {count} visible GPUs"
        )


def check_precision(precision: str, bf16_supported: bool, gpu: str) -> None:
    """bf16 on a CUDA run needs a GPU that computes in bf16 (CPU autocast always can)."""
    if precision == "bf16" and not bf16_supported:
        raise UsageExit(f"--precision bf16: the GPU ({gpu}) has no bf16 support (expected fp32)")
