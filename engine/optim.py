"""The optimizer: AdamW (ZeRO-1 across ranks), weight decay on the weight matrices only.

Biases, norm weights and every other parameter with fewer than two dimensions are left out
of the decay, as transformers' Trainer and lerobot do: decaying a norm's gain or a bias
towards zero only fights the layer's scale. One process gets torch.optim.AdamW, several
ranks a ZeroRedundancyOptimizer (ZeRO-1) over the same two groups. A checkpoint saved before
the split (one group, every parameter decayed) is converted on resume (`regroup`).
"""

from __future__ import annotations

import torch
from torch import nn

BETAS = (0.9, 0.95)
WEIGHT_DECAY = 0.01
NO_DECAY = "biases, norm weights and other parameters with ndim < 2"


def decays(module: nn.Module) -> dict[str, bool]:
    """Parameter name -> whether weight decay applies to it, in named_parameters order."""
    norms = {
        name
        for name, sub in module.named_modules()
        if isinstance(sub, (nn.LayerNorm, nn.GroupNorm)) or "Norm" in type(sub).__name__
    }
    out = {}
    for name, p in module.named_parameters():
        owner = name.rpartition(".")[0]
        out[name] = p.ndim >= 2 and owner not in norms
    return out


def groups(module: nn.Module, weight_decay: float = WEIGHT_DECAY) -> list[dict]:
    """Two parameter groups: the decayed weight matrices, then the rest at weight decay 0."""
    flags = decays(module)
    params = dict(module.named_parameters())
    return [
        {"params": [params[n] for n, d in flags.items() if d], "weight_decay": weight_decay},
        {"params": [params[n] for n, d in flags.items() if not d], "weight_decay": 0.0},
    ]


def build(module: nn.Module, lr: float, distributed: bool) -> torch.optim.Optimizer:
    """AdamW over `groups(module)`, sharded with ZeRO-1 across ranks when distributed."""
    if distributed:  # torch.distributed.optim takes most of a second to import: ranks only
        from torch.distributed.optim import ZeroRedundancyOptimizer

        return ZeroRedundancyOptimizer(
            groups(module), optimizer_class=torch.optim.AdamW, lr=lr, betas=BETAS
        )
    return torch.optim.AdamW(groups(module), lr=lr, betas=BETAS)


def describe(module: nn.Module) -> dict:
    """For the meta record: what is decayed and what is not."""
    flags = decays(module)
    sizes = {n: p.numel() for n, p in module.named_parameters()}
    return {
        "name": "AdamW",
        "betas": list(BETAS),
        "weight_decay": WEIGHT_DECAY,
        "no_decay": NO_DECAY,
        "decayed_tensors": sum(flags.values()),
        "decayed_params": sum(sizes[n] for n, d in flags.items() if d),
        "no_decay_tensors": sum(not d for d in flags.values()),
        "no_decay_params": sum(sizes[n] for n, d in flags.items() if not d),
    }


def regroup(state: dict, module: nn.Module) -> dict:
    """An optimizer state dict of one group, given as the two groups of `groups`.

    The one group has every parameter decayed (a state saved before the split). Its
    per-parameter state is moved to the new indices and the hyperparameters are kept. A state
    of two groups is returned as it is.
    """
    if len(state.get("param_groups", ())) != 1:
        return state
    (old,) = state["param_groups"]
    flags = list(decays(module).values())
    if len(old["params"]) != len(flags):
        return state  # not this model: load_state_dict says so
    order = [i for i, d in enumerate(flags) if d] + [i for i, d in enumerate(flags) if not d]
    ids = old["params"]  # the old indices, in named_parameters order
    moved = {new: state["state"][ids[i]] for new, i in enumerate(order) if ids[i] in state["state"]}
    first = sum(flags)
    return {
        "state": moved,
        "param_groups": [
            {**old, "params": list(range(first)), "weight_decay": old["weight_decay"]},
            {**old, "params": list(range(first, len(order))), "weight_decay": 0.0},
        ],
    }
