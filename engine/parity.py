"""`python -m engine parity`: the same optimizer steps as 1 process and as N gloo ranks.

Both runs take the identical global batches (same seed, same per-slot augmentation and
flow noise), so any parameter difference beyond float rounding is the distributed
machinery's (DDP averaging, ZeRO-1 sharding, no_sync accumulation) fault.
"""

from __future__ import annotations

import argparse
import os
import socket
import tempfile
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp

from engine import corpus, distributed
from engine.pipeline import StepBatches, loader
from engine.stats import NormStats
from engine.train import build_session, optimizer_step

TOLERANCE = 1e-6
MICRO = 6
CHUNKS = 2


def recipe(args: argparse.Namespace, nproc: int) -> argparse.Namespace:
    return argparse.Namespace(
        model_size=args.model_size, batch_size=MICRO * CHUNKS * nproc, backward_chunks=CHUNKS,
        seed=0, image_augment=0.8, objective="joint", insulate_flow=False,
        # The demosonly schedule (its first steps are what parity compares).
        lr=3e-4, warmup_steps=50, steps=1000, run_steps=args.steps,
        chunk_grad_allreduce=args.chunk_grad_allreduce)


def train_steps(ns: argparse.Namespace, ctx: distributed.Context, root: Path) -> dict:
    data = corpus.load(root)
    stats = NormStats.load(root / "stats.json")
    session = build_session(ns, ctx)
    batches = iter(loader(StepBatches(data, stats, session.layout, ns.seed, ns.image_augment),
                          0, ns.run_steps, workers=0, prefetch=2, pin=False))
    for step in range(ns.run_steps):
        optimizer_step(session, batches, step)
    return {k: v.detach().cpu().clone() for k, v in session.module.state_dict().items()}


def _rank(rank: int, world: int, port: int, ns: argparse.Namespace, root: str, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    ctx = distributed.setup("cpu")
    try:
        state = train_steps(ns, ctx, Path(root))
        if ctx.main:
            torch.save(state, out)
    finally:
        distributed.teardown()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_parity(args: argparse.Namespace) -> int:
    root = Path(args.data_dir) if args.data_dir else corpus.default_dir()
    corpus.ensure(root)
    n = args.nproc
    ns = recipe(args, n)
    mode = "per-chunk all-reduce" if args.chunk_grad_allreduce else "no_sync accumulation"
    print(f"recipe: {args.model_size} model, batch {ns.batch_size}, {args.steps} steps, "
          f"lr {ns.lr} with {ns.warmup_steps} warmup steps")
    # The ranks go first: forking them before this process runs any torch op (and so
    # before OpenMP starts its threads) is safe and skips re-importing torch per rank.
    t0 = time.perf_counter()
    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rank0.pt")
        mp.start_processes(_rank, args=(n, _free_port(), ns, str(root), out), nprocs=n,
                           join=True, start_method=method)
        multi = torch.load(out, weights_only=True)
    print(f"{n} ranks (gloo, DDP + ZeRO-1, {mode}): {CHUNKS} chunks x {MICRO} per rank "
          f"({time.perf_counter() - t0:.1f}s)")
    t0 = time.perf_counter()
    single_ctx = distributed.Context(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))
    single = train_steps(ns, single_ctx, root)
    print(f"1 process: {CHUNKS} chunks x {ns.batch_size // CHUNKS} ({time.perf_counter() - t0:.1f}s)")
    diffs = {k: float((single[k].double() - multi[k].double()).abs().max()) for k in single
             if single[k].is_floating_point()}
    worst = sorted(diffs.items(), key=lambda kv: kv[1], reverse=True)[:3]
    for name, d in worst:
        print(f"  {name}: {d:.3g}")
    largest = max(diffs.values())
    print(f"within tolerance {TOLERANCE:g}: {'yes' if largest <= TOLERANCE else 'NO'}")
    print(f"max_param_diff {largest:.3g}")
    return 0 if largest <= TOLERANCE else 1
