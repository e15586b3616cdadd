"""Targets and pixels as the recipe sees them: actions beyond q01/q99 are not clipped (the flow
targets and the raw MAE see them; only the AR tokens saturate), and augmented pixels stay in
0..255 after the colour gain."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.engine

import torch  # noqa: E402
from fontaine_engine.pipeline import BINS, _augment, probe_batch, tokenize  # noqa: E402
from fontaine_engine.stats import NormStats  # noqa: E402


def _stats() -> NormStats:
    six = np.ones(6, dtype=np.float32)
    return NormStats(action_q01=-10 * six, action_q99=10 * six, state_mean=0 * six, state_std=six)


def test_actions_beyond_the_quantiles_are_not_clipped():
    stats = _stats()
    a = np.array([[-30.0, -10.0, 0.0, 10.0, 20.0, 50.0]], dtype=np.float32)
    norm = stats.norm_actions(a)
    assert np.allclose(norm, [[-3.0, -1.0, 0.0, 1.0, 2.0, 5.0]])
    back = stats.unnorm_actions(torch.from_numpy(norm))
    assert torch.allclose(back, torch.from_numpy(a))  # round trip, no floor under the MAE
    # the AR tokens saturate at the edge bins, the only place a bound applies
    assert tokenize(norm).tolist() == [[0, 0, BINS // 2, BINS - 1, BINS - 1, BINS - 1]]


def test_probe_targets_keep_out_of_range_actions(corpus_dir):
    from fontaine_engine import corpus

    data = corpus.load(corpus_dir)
    tight = NormStats(
        action_q01=np.full(6, -1.0, np.float32),
        action_q99=np.full(6, 1.0, np.float32),
        state_mean=np.zeros(6, np.float32),
        state_std=np.ones(6, np.float32),
    )
    idx = data.eval_draw()[:32]
    batch = probe_batch(data, idx, tight, 0)
    # the corpus's joint angles span tens of degrees: normalised by a +-1 band they reach far
    # beyond +-1, and the raw targets are the data's own actions
    assert float(batch["actions"].abs().max()) > 5
    assert torch.allclose(batch["raw_actions"], torch.from_numpy(data.actions[idx]).float())


def test_augmented_pixels_stay_pixels():
    rng = np.random.default_rng(0)
    white = np.full((32, 32, 3), 250.0, dtype=np.float32)
    white[0, 0] = 0.0  # some contrast, so the gain has something to stretch
    seen = []
    for _ in range(200):
        out = _augment(white, rng)
        seen.append(out.max())
        assert out.min() >= 0.0 and out.max() <= 255.0
    assert max(seen) == 255.0  # the gain did push above 255 and was clipped there
