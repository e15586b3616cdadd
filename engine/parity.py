"""`python -m fontaine_engine parity`: the same optimizer steps as 1 process and as N gloo ranks.

Both runs take the identical global batches (same seed, same per-slot augmentation and
flow noise, loader workers on, flow insulation on), so any difference beyond float rounding
is the distributed machinery's (DDP averaging, ZeRO-1 sharding, no_sync accumulation or
per-chunk all-reduce) fault. Two comparisons, per sync mode:

- the gradient of the first optimizer step, after all its backward passes and before
  `optimizer.step`: the N-rank run's all-reduced gradient against the 1-process one on the
  same global batch. The gradient is taken before clipping (the clipped one is snapshotted
  and divided by the clip coefficient the returned norm gives): clipping to norm 1 and
  Adam's normalisation would otherwise hide a uniform scale error, such as a rank that
  forgets to divide by the world size. Reported: the largest |difference|, and per tensor
  that difference over the tensor's largest |g| (`max_grad_diff`, the worst tensor),
  which must stay within GRAD_TOLERANCE; a 2x (or 1/N) scale error reads 1 (or 1 - 1/N).
- the parameters after STEPS (20) optimizer steps at the recipe's full learning rate
  (3e-4, no warmup, the cosine over 1000 steps: 3e-4 down to 2.99e-4 here): the largest
  |difference| (`max_param_diff`), within PARAM_TOLERANCE. This catches what the first
  gradient cannot (ZeRO-1's shard broadcast, later steps' batches); a uniform gradient
  scale it cannot, as Adam is scale invariant.

Tolerances, measured on the 2-core machine (tiny model, 2 ranks, batch 24 = 2 chunks x 6
per rank, 20 steps, the generated LeRobot-format corpus; the same figures in both modes, over
seeds 0-2): honest runs read max_grad_diff 4.8e-7 to 6.6e-7 and max_param_diff 4.0e-7 to
1.2e-6. GRAD_TOLERANCE 1e-4 leaves a margin of ~150x over the honest figure and sits ~10^4
below a uniform 2x scale on every rank (which reads 1.0: the gradients disagree, while the
parameters agree to 4e-7, Adam being scale invariant); PARAM_TOLERANCE 3e-5 leaves ~25x over
the honest figure, while one rank's gradient scaled by 2 (`--inject-grad-scale 2
--inject-rank 1`) moves the parameters by 3.9e-3 (~100x beyond it). The vision encoder's
attention key bias is gradient-free (see `gradient_free`) and left out of both.

`--inject-grad-scale F` (with `--inject-rank R`, default every rank) is the check's self-test:
it multiplies the gradient of every parameter by F, on the chosen ranks of the N-rank run
only, before DDP all-reduces it; the check must then fail (exit 1).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp

from . import corpus, distributed
from .pipeline import StepBatches, loader
from .session import build_session
from .train import GRAD_CLIP, cpu_threads, lr_at, optimizer_step

GRAD_TOLERANCE = 1e-4
PARAM_TOLERANCE = 3e-5
ROUNDING = 1e-6  # a first-step gradient this small (relative) is rounding noise
MICRO = 6
CHUNKS = 2
WORKERS = 2
PREFETCH = 2
LR = 3e-4
SCHEDULE_STEPS = 1000  # the demosonly recipe's length: the lr stays near LR for the compared steps
MODES = {"no_sync": "no_sync accumulation", "chunk": "per-chunk all-reduce"}


def recipe(args: argparse.Namespace, nproc: int, mode: str) -> argparse.Namespace:
    return argparse.Namespace(
        model_size=args.model_size,
        batch_size=MICRO * CHUNKS * nproc,
        backward_chunks=CHUNKS,
        seed=args.seed,
        image_augment=0.8,
        objective="joint",
        insulate_flow=True,
        lr=LR,
        warmup_steps=0,
        steps=SCHEDULE_STEPS,
        run_steps=args.steps,
        chunk_grad_allreduce=mode == "chunk",
    )


def _inject(module: torch.nn.Module, factor: float) -> None:
    """Scale every parameter's gradient as it arrives, before DDP's reducer sees it."""
    for p in module.parameters():
        if p.requires_grad:
            p.register_hook(lambda g, f=factor: g * f)


def train_steps(
    ns: argparse.Namespace, ctx: distributed.Context, root: Path, inject: float = 1.0
) -> dict:
    """Run ns.run_steps optimizer steps and return the gradient and parameters compared.

    The gradient is the first step's, before clipping; the parameters are the initial and the
    final ones.
    """
    data = corpus.load(root)
    session = build_session(ns, ctx, data)
    initial = {k: v.detach().cpu().clone() for k, v in session.module.state_dict().items()}
    if inject != 1.0:
        _inject(session.module, inject)
    grads: dict[str, torch.Tensor] = {}
    step_fn = session.optimizer.step

    def snapshot_then_step(*a, **kw):
        if not grads:
            grads.update(
                {
                    n: p.grad.detach().cpu().clone()
                    for n, p in session.module.named_parameters()
                    if p.grad is not None
                }
            )
        return step_fn(*a, **kw)

    # this instance's step only (ZeRO's too), after clipping: an optimizer hook would be a
    # second path to keep equal to it
    session.optimizer.step = snapshot_then_step  # type: ignore[method-assign]
    batches = iter(
        loader(
            StepBatches(data, data.stats(), session.layout, ns.seed, ns.image_augment),
            0,
            ns.run_steps,
            workers=WORKERS,
            prefetch=PREFETCH,
            pin=False,
        )
    )
    norms = [optimizer_step(session, batches, step)["grad_norm"] for step in range(ns.run_steps)]
    norm = norms[0]  # run_steps >= 1
    del batches  # shuts the loader's workers down
    # clip_grad_norm_ multiplied the gradient by min(1, GRAD_CLIP / (norm + 1e-6))
    unclip = max(1.0, (norm + 1e-6) / GRAD_CLIP)
    return {
        "grads": {n: g.double() * unclip for n, g in grads.items()},
        "grad_norm": norm,
        "initial": initial,
        "params": {k: v.detach().cpu().clone() for k, v in session.module.state_dict().items()},
    }


def _rank(
    rank: int,
    world: int,
    port: int,
    ns: argparse.Namespace,
    root: str,
    out: str,
    inject: float,
    inject_rank: int | None,
) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_RANK=str(rank),
    )
    torch.set_num_threads(1)
    ctx = distributed.setup("cpu")
    try:
        factor = inject if inject_rank is None or inject_rank == rank else 1.0
        result = train_steps(ns, ctx, Path(root), factor)
        if ctx.main:
            torch.save(result, out)
    finally:
        distributed.teardown()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def compare_grads(
    single: dict, multi: dict, skip: list[str]
) -> tuple[float, float, list[tuple[str, float]], list[str]]:
    """Compare the two runs' first-step gradients, over the tensors not in `skip`.

    Returns (largest |difference|, worst per-tensor relative difference, the 3 worst tensors,
    tensors with a gradient in one run only).
    """
    a, b = single["grads"], multi["grads"]
    missing = sorted(set(a) ^ set(b))
    largest, rel = 0.0, {}
    for name in sorted((set(a) & set(b)) - set(skip)):
        d = float((a[name] - b[name]).abs().max())
        scale = float(a[name].abs().max())
        largest = max(largest, d)
        rel[name] = d / scale if scale > 0 else (0.0 if d == 0 else float("inf"))
    worst = sorted(rel.items(), key=lambda kv: kv[1], reverse=True)[:3]
    return largest, max(rel.values(), default=0.0), worst, missing


def gradient_free(single: dict) -> list[str]:
    """Tensors whose first-step gradient is rounding noise, left out of both comparisons.

    Rounding noise: the largest |g| is below ROUNDING x the largest of any tensor, as for an
    attention key bias, which softmax cancels exactly. Adam normalises that noise into
    lr-sized steps in a random direction, so these tensors' parameters differ between any two
    runs whose sums round differently. They are left out of both comparisons (and named)
    rather than loosening the tolerances. A scale bug shows in every other tensor.
    """
    grads = single["grads"]
    top = max((float(g.abs().max()) for g in grads.values()), default=0.0)
    return sorted(n for n, g in grads.items() if float(g.abs().max()) <= ROUNDING * top)


def compare_params(
    single: dict, multi: dict, skip: list[str]
) -> tuple[float, list[tuple[str, float]], float]:
    """Compare the two runs' parameters, over the parameters not in `skip`.

    Returns (largest |difference|, the 3 worst tensors, largest |change| over the steps).
    """
    a, b, init = single["params"], multi["params"], single["initial"]
    diffs = {
        k: float((a[k].double() - b[k].double()).abs().max())
        for k in a
        if a[k].is_floating_point() and k not in skip
    }
    moved = max(float((a[k].double() - init[k].double()).abs().max()) for k in diffs)
    worst = sorted(diffs.items(), key=lambda kv: kv[1], reverse=True)[:3]
    return max(diffs.values()), worst, moved


def _usage(message: str) -> int:
    print(f"engine: error: {message}", file=sys.stderr)
    return 2


def run_parity(args: argparse.Namespace) -> int:
    n = args.nproc
    inject = getattr(args, "inject_grad_scale", None)
    inject_rank = getattr(args, "inject_rank", None)
    if n < 2:
        return _usage(f"--nproc {n}: expected at least 2 ranks (1 process is the reference)")
    if inject_rank is not None and inject is None:
        return _usage("--inject-rank: only with --inject-grad-scale")
    if inject_rank is not None and inject_rank >= n:
        return _usage(f"--inject-rank {inject_rank}: expected a rank below --nproc {n}")
    root = Path(args.data_dir) if args.data_dir else corpus.default_dir()
    corpus.ensure(root)
    modes = list(MODES) if args.mode == "both" else [args.mode]
    print(
        f"recipe: {args.model_size} model, batch {MICRO * CHUNKS * n} ({CHUNKS} chunks), "
        f"{args.steps} steps at lr {LR:g} (no warmup; {lr_at(args.steps - 1, LR, 0, SCHEDULE_STEPS):.4g} "
        f"at the last), flow insulated, image augment 0.8, {WORKERS} loader workers, seed {args.seed}"
    )
    if inject is not None:
        who = "every rank" if inject_rank is None else f"rank {inject_rank}"
        print(
            f"self-test: gradients x {inject:g} on {who} of the {n}-rank run (the check must fail)"
        )
    # The ranks go first: forking them before this process runs any torch op (and so
    # before OpenMP starts its threads) is safe and skips re-importing torch per rank.
    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    multi, took = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes:
            t0 = time.perf_counter()
            out = os.path.join(tmp, f"{mode}.pt")
            mp.start_processes(
                _rank,
                args=(
                    n,
                    _free_port(),
                    recipe(args, n, mode),
                    str(root),
                    out,
                    1.0 if inject is None else inject,
                    inject_rank,
                ),
                nprocs=n,
                join=True,
                start_method=method,
            )
            multi[mode] = torch.load(out, weights_only=True)
            took[mode] = time.perf_counter() - t0
    torch.set_num_threads(cpu_threads())
    t0 = time.perf_counter()
    single_ctx = distributed.Context(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))
    single = train_steps(recipe(args, n, modes[0]), single_ctx, root)
    print(f"1 process: {CHUNKS} chunks x {MICRO * n} ({time.perf_counter() - t0:.1f}s)")
    skip = gradient_free(single)
    if skip:
        print(
            f"left out of both comparisons (gradient-free, rounding-level step-1 "
            f"gradient): {', '.join(skip)}"
        )
    ok = True
    for mode in modes:
        m = multi[mode]
        print(
            f"{n} ranks (gloo, DDP + ZeRO-1, {MODES[mode]}): {CHUNKS} chunks x {MICRO} per rank "
            f"({took[mode]:.1f}s)"
        )
        g_abs, g_rel, g_worst, missing = compare_grads(single, m, skip)
        grad_ok = g_rel <= GRAD_TOLERANCE and not missing
        print(
            f"  step 1 gradient before clipping (norm {single['grad_norm']:.6g} vs "
            f"{m['grad_norm']:.6g}): largest |diff| {g_abs:.3g}; per tensor over its max |g|:"
        )
        for name, d in g_worst:
            print(f"    {name}: {d:.3g}")
        if missing:
            print(f"    a gradient in one run only: {', '.join(missing)}")
        print(f"  within tolerance {GRAD_TOLERANCE:g}: {'yes' if grad_ok else 'NO'}")
        p_abs, p_worst, moved = compare_params(single, m, skip)
        param_ok = p_abs <= PARAM_TOLERANCE
        print(
            f"  parameters after {args.steps} steps (largest change {moved:.3g}): "
            f"largest |diff| {p_abs:.3g}"
        )
        for name, d in p_worst:
            print(f"    {name}: {d:.3g}")
        print(f"  within tolerance {PARAM_TOLERANCE:g}: {'yes' if param_ok else 'NO'}")
        print(f"max_grad_diff {g_rel:.3g}")
        print(f"max_param_diff {p_abs:.3g}")
        ok = ok and grad_ok and param_ok
    return 0 if ok else 1
