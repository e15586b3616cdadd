"""--insulate-flow: the flow loss sends exactly zero gradient into vision + backbone."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.engine


def _batch(corpus_dir):
    from fontaine_engine.pipeline import Layout, StepBatches

    from fontaine_engine import corpus

    data = corpus.load(corpus_dir)
    stats = data.stats()
    return StepBatches(data, stats, Layout(8, 1, 1, 0), 0, 0.8).micro(0, 0)


@pytest.mark.parametrize("insulate", [True, False])
def test_flow_loss_gradient_into_backbone(corpus_dir, insulate):
    from fontaine_engine.model import Policy

    torch.manual_seed(0)
    model = Policy("tiny")
    out = model(_batch(corpus_dir), objective="flow", insulate=insulate)
    out["loss"].backward()
    upstream = dict(model.backbone_parameters())
    assert len(upstream) > 20 and any(n.startswith("vision.") for n in upstream)
    nonzero = [
        n for n, p in upstream.items() if p.grad is not None and bool(p.grad.abs().max() > 0)
    ]
    if insulate:
        assert nonzero == []
    else:  # the same check must be able to see gradient when it is there
        assert len(nonzero) > len(upstream) // 2
    assert all(p.grad is not None and p.grad.abs().max() > 0 for p in model.flow.parameters())


def test_joint_insulated_backbone_grad_equals_ar_only(corpus_dir):
    """Joint loss with insulation: backbone grads are exactly the AR loss's grads."""
    from fontaine_engine.model import Policy

    torch.manual_seed(0)
    model = Policy("tiny")
    batch = _batch(corpus_dir)
    model(batch, objective="joint", insulate=True)["loss"].backward()
    joint = {n: p.grad.clone() for n, p in model.backbone_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    model(batch, objective="ar", insulate=True)["loss"].backward()
    ar = {n: p.grad.clone() for n, p in model.backbone_parameters() if p.grad is not None}
    assert joint.keys() == ar.keys()
    assert all(torch.equal(joint[n], ar[n]) for n in joint)
