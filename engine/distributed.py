"""Process-group plumbing: torchrun env, device choice, and the few collectives we use."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True, slots=True)
class Context:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def world_from_env() -> tuple[int, int, int]:
    return (
        int(os.environ.get("RANK", "0")),
        int(os.environ.get("WORLD_SIZE", "1")),
        int(os.environ.get("LOCAL_RANK", "0")),
    )


def local_world_size(env: Mapping[str, str] | None = None) -> int:
    """Ranks on this node: torchrun's LOCAL_WORLD_SIZE, else WORLD_SIZE (one node), else 1."""
    env = os.environ if env is None else env
    return int(env.get("LOCAL_WORLD_SIZE") or env.get("WORLD_SIZE") or "1")


def pick_device(requested: str, local_rank: int) -> torch.device:
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda":
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def setup(requested_device: str) -> Context:
    rank, world, local = world_from_env()
    device = pick_device(requested_device, local)
    if world > 1 and not dist.is_initialized():
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(
            backend=backend,
            rank=rank,
            world_size=world,
            device_id=device if device.type == "cuda" else None,
        )
    return Context(rank=rank, world_size=world, local_rank=local, device=device)


def teardown() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def barrier(ctx: Context) -> None:
    if ctx.distributed:
        dist.barrier()


def broadcast(ctx: Context, tensor: torch.Tensor) -> torch.Tensor:
    """Rank 0's value of tensor, on every rank (CPU tensor in, CPU tensor out)."""
    if not ctx.distributed:
        return tensor
    t = tensor.to(ctx.device)
    dist.broadcast(t, src=0)
    return t.cpu()


def all_sum(ctx: Context, tensor: torch.Tensor) -> torch.Tensor:
    if not ctx.distributed:
        return tensor
    t = tensor.to(ctx.device)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t.cpu()
