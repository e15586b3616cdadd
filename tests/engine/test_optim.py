"""AdamW's weight decay: the weight matrices only, never biases or norm weights (engine/optim.py),
and a checkpoint saved with one decayed group resumed into the two."""

from __future__ import annotations

import argparse

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.engine


def _session(lr=0.1):
    from fontaine_engine.session import build_session

    from fontaine_engine import distributed

    ns = argparse.Namespace(
        model_size="tiny", batch_size=4, backward_chunks=1, micro_batch=0, seed=0, lr=lr
    )
    ctx = distributed.Context(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))
    return build_session(ns, ctx)


def test_a_step_without_gradient_decays_the_matrices_and_leaves_norms_and_biases():
    """Zero gradients: Adam's update is 0, so what moves is the decay alone."""
    s = _session()
    before = {n: p.detach().clone() for n, p in s.module.named_parameters()}
    for p in s.module.parameters():
        p.grad = torch.zeros_like(p)
    s.optimizer.step()
    after = dict(s.module.named_parameters())
    norms = [n for n in before if "norm" in n and n.endswith("weight")]
    biases = [n for n in before if n.endswith(".bias")]
    mats = [n for n, t in before.items() if t.ndim >= 2]
    assert len(norms) >= 5 and len(biases) >= 5 and len(mats) >= 10
    for name in norms + biases:
        assert torch.equal(after[name], before[name]), name
    for name in mats:  # p * (1 - lr * weight_decay)
        assert torch.allclose(after[name], before[name] * (1 - 0.1 * 0.01), atol=1e-7), name
        assert not torch.equal(after[name], before[name]), name


def test_every_parameter_is_in_one_group_and_the_meta_counts_them():
    from fontaine_engine.model import count_parameters

    from fontaine_engine import optim

    s = _session()
    groups = s.optimizer.param_groups
    assert [g["weight_decay"] for g in groups] == [0.01, 0.0]
    ids = [id(p) for g in groups for p in g["params"]]
    assert sorted(ids) == sorted(id(p) for p in s.module.parameters())
    d = optim.describe(s.module)
    assert d["decayed_params"] + d["no_decay_params"] == count_parameters(s.module)
    assert d["no_decay_tensors"] == len(groups[1]["params"]) and d["weight_decay"] == 0.01


def test_a_one_group_checkpoint_resumes_into_the_two_groups():
    from fontaine_engine import optim

    s = _session()
    old = torch.optim.AdamW(s.module.parameters(), lr=0.1, betas=optim.BETAS, weight_decay=0.01)
    for i, p in enumerate(s.module.parameters()):
        p.grad = torch.full_like(p, float(i + 1))
    old.step()
    state = old.state_dict()
    s.optimizer.load_state_dict(optim.regroup(state, s.module))
    for p in s.module.parameters():  # each parameter's moments follow it to its new index
        assert torch.equal(s.optimizer.state[p]["exp_avg"], old.state[p]["exp_avg"])
    assert [g["weight_decay"] for g in s.optimizer.param_groups] == [0.01, 0.0]
    assert optim.regroup(s.optimizer.state_dict(), s.module)["param_groups"][1]["params"]


def test_zero_1_is_built_and_consolidated_for_its_checkpoint(tmp_path):
    """Across ranks (one gloo rank here) build() gives ZeRO-1, and optimizer_state gathers its
    shards: a ZeRO optimizer's state_dict without that is refused by torch."""
    import torch.distributed as dist

    from fontaine_engine import checkpoint, optim

    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1
    )
    try:
        module = torch.nn.Linear(4, 3)
        opt = optim.build(module, lr=0.1, distributed=True)
        assert type(opt).__name__ == "ZeroRedundancyOptimizer"
        module(torch.ones(2, 4)).sum().backward()
        opt.step()
        state = checkpoint.optimizer_state(opt)
        assert state is not None and len(state["param_groups"]) == 2 and state["state"]
    finally:
        dist.destroy_process_group()
