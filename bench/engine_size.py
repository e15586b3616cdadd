"""The engine's model sizes: parameter count and seconds per optimizer step at a small batch.

One process, synthetic batches of the generated corpus's shape (32-pixel frames, 8 x 6
actions), AdamW as the engine builds it (engine/optim.py); per size and variant the median
of --steps timed steps after one warm-up step. Variants: fp32, and bf16 autocast with
activation checkpointing (what a large model runs with on a GPU).

    python bench/engine_size.py --sizes small,base,large --batch 2 --steps 3 [--device cuda]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from fontaine_engine.corpus import CHUNK, IMAGE_SIZE, MOTORS
from fontaine_engine.model import Policy, count_parameters
from fontaine_engine.pipeline import BINS, FLOW_SAMPLES

from fontaine_engine import accel, optim


def batch(n: int, device: torch.device) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    out = {
        "images": torch.rand(n, 3, IMAGE_SIZE, IMAGE_SIZE, generator=g) * 2 - 1,
        "state": torch.randn(n, MOTORS, generator=g),
        "actions": torch.randn(n, CHUNK, MOTORS, generator=g).clamp(-1, 1),
        "tokens": torch.randint(0, BINS, (n, CHUNK * MOTORS), generator=g),
        "flow_t": torch.rand(n, FLOW_SAMPLES, generator=g),
        "flow_noise": torch.randn(n, FLOW_SAMPLES, CHUNK, MOTORS, generator=g),
    }
    return {k: v.to(device) for k, v in out.items()}


def step_seconds(size: str, variant: str, n: int, steps: int, device: torch.device) -> float:
    torch.manual_seed(0)
    model = Policy(size).to(device)
    precision = "bf16" if variant.startswith("bf16") else "fp32"
    if "checkpointing" in variant:
        accel.enable_activation_checkpointing(model)
    opt = optim.build(model, 3e-4, distributed=False)
    b = batch(n, device)
    times = []
    for _ in range(steps + 1):
        t0 = time.perf_counter()
        with accel.autocast(device, precision):
            out = model(b, "joint", True)
        out["loss"].backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times[1:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="small,base,large")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--variants", default="fp32,bf16+checkpointing")
    args = ap.parse_args()
    device = torch.device(args.device)
    print(f"device {device}, threads {torch.get_num_threads()}, batch {args.batch}")
    print(f"{'size':6} {'params':>12} {'variant':22} {'s/step':>8}")
    for size in args.sizes.split(","):
        with torch.device("meta"):
            params = count_parameters(Policy(size))
        for variant in args.variants.split(","):
            s = step_seconds(size, variant, args.batch, args.steps, device)
            print(f"{size:6} {params:>12,} {variant:22} {s:>8.3f}", flush=True)


if __name__ == "__main__":
    main()
