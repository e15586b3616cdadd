"""Eval probe: flow-sampled chunk MAE (raw units), AR CE and flow loss on fixed frames.

A chunk's steps past its episode's end (action_is_pad) count in none of them.

Deterministic for a checkpoint: the frames are fixed per corpus (Corpus.eval_draw), the
flow-loss noise and sampling noise by PROBE_SEED, so every run on a corpus is scored on the
same frames with the same noise whatever its training seed. Each rank scores a disjoint stride of the frames (no padding) and
the summed errors and counts are all-reduced.
"""

from __future__ import annotations

import numpy as np
import torch

from . import accel, distributed
from .corpus import Corpus
from .model import EULER_STEPS, Policy, step_weights
from .pipeline import probe_batch
from .stats import NormStats

EVAL_BATCH = 64  # --eval-batch's default
PROBE_SEED = 0  # the eval probe's noise; the train slice's is PROBE_SEED + 1


class Probe:
    """A fixed frame set with its fixed noise, scored against a model."""

    def __init__(
        self,
        corpus: Corpus,
        idx: np.ndarray,
        stats: NormStats,
        seed: int,
        ctx: distributed.Context,
        precision: str = "fp32",
        sampling_steps: int = EULER_STEPS,
        batch: int = EVAL_BATCH,
    ) -> None:
        self.stats, self.ctx, self.names = stats, ctx, corpus.names
        self.eval_batch = batch  # frames per forward pass (memory, not the numbers)
        self.precision = precision  # the forward passes' autocast, as in training
        self.sampling_steps = sampling_steps  # Euler steps of the flow sampler
        full = probe_batch(corpus, idx, stats, seed)
        gen = torch.Generator().manual_seed(seed + 0x5A3)
        full["sample_noise"] = torch.randn(len(idx), corpus.chunk, corpus.motors, generator=gen)
        mine = slice(ctx.rank, None, ctx.world_size)
        self.batch = {k: v[mine] for k, v in full.items()}
        self.n_frames = len(idx)

    @torch.no_grad()
    def score(self, model: Policy) -> dict:
        """Summed per-dataset abs error and counts, reduced across ranks, then averaged."""
        was_training = model.training
        model.eval()
        n_ds = len(self.names)
        # [abs_err per dataset..., count per dataset..., ar_ce*n, flow*n]
        acc = torch.zeros(2 * n_ds + 2, dtype=torch.float64)
        n = len(self.batch["dataset"])
        for start in range(0, n, self.eval_batch):
            end = start + self.eval_batch
            b = {k: v[start:end].to(self.ctx.device) for k, v in self.batch.items()}
            m = len(b["dataset"])
            with accel.autocast(self.ctx.device, self.precision):
                prefix_h, act_h = model.encode(b)
                out = model.heads(prefix_h, act_h, b)
                pred = self.stats.unnorm_actions(
                    model.sample(
                        prefix_h, b["sample_noise"], self.sampling_steps, model.prefix_keep(b)
                    ).float()
                )
            keep = step_weights(b, model.chunk)[:, :, None].expand_as(pred)  # not the padding
            err = ((pred - b["raw_actions"]).abs() * keep).sum(dim=(1, 2)) / keep.sum(dim=(1, 2))
            err = err.double().cpu()
            ds = b["dataset"].cpu()
            acc[:n_ds] += torch.zeros(n_ds, dtype=torch.float64).index_add_(0, ds, err)
            acc[n_ds : 2 * n_ds] += torch.bincount(ds, minlength=n_ds).double()
            acc[-2] += out["ar_ce"].double().cpu() * m
            acc[-1] += out["flow_loss"].double().cpu() * m
        acc = distributed.all_sum(self.ctx, acc)
        model.train(was_training)
        count = acc[n_ds : 2 * n_ds]
        total = float(count.sum())
        nan = float("nan")
        return {
            "mae": float(acc[:n_ds].sum()) / total if total else nan,
            "ar_ce": float(acc[-2]) / total if total else nan,
            "flow_loss": float(acc[-1]) / total if total else nan,
            "breakdown": {
                name: (float(acc[i] / count[i]) if count[i] else nan)
                for i, name in enumerate(self.names)
            },
            "n_frames": int(total),
        }


def eval_record(eval_probe: Probe, train_probe: Probe, model: Policy, breakdown: bool) -> dict:
    ev, tr = eval_probe.score(model), train_probe.score(model)
    return {
        "eval_chunk_mae": ev["mae"],
        "train_chunk_mae": tr["mae"],
        "eval_ar_ce": ev["ar_ce"],
        "eval_flow_loss": ev["flow_loss"],
        "breakdown": ev["breakdown"] if breakdown else {},
        "n_frames": ev["n_frames"],
    }
