"""What reaches the model from a LeRobotDataset: the padded steps of an action chunk
(action_is_pad), every camera, image features and the task text, checked against what was
written in lerobot's format."""

from __future__ import annotations

import numpy as np
import pytest
import torch

LENGTHS = (10, 5, 12)  # frames per episode: at 10 fps a chunk of 8 runs past every end
SIZE = 32  # the engine's image size: lossless videos read back bit for bit
FPS = 10


def _frames(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, SIZE, SIZE, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A three-episode v3.0 dataset written with the engine's lerobot writer."""
    from fontaine_engine import lerobot_writer, synthetic

    root = tmp_path_factory.mktemp("inputs") / "ds"
    rng = np.random.default_rng(7)
    states = [rng.normal(size=(n, 6)).astype(np.float32) * 30 for n in LENGTHS]
    actions = [rng.normal(size=(n, 6)).astype(np.float32) * 30 for n in LENGTHS]
    front = [_frames(10 + i, n) for i, n in enumerate(LENGTHS)]
    tasks = ["Pick up the cube.", "Stack the red block on the blue one.", "Pick up the cube."]
    lerobot_writer.write(
        root,
        fps=FPS,
        camera="observation.images.front",
        frames_by_episode=front,
        states=states,
        actions=actions,
        tasks=tasks,
        state_names=synthetic.STATE_NAMES,
        robot_type="so101_follower",
        episodes_per_file=2,
    )
    return {"root": root, "actions": actions, "front": front, "tasks": tasks}


def _policy(data):
    from fontaine_engine.model import Policy

    torch.manual_seed(0)
    return Policy("tiny", data.chunk, data.motors, int(data.states.shape[1]))


def _batch(data, idx):
    from fontaine_engine import pipeline

    stats = data.recomputed_stats()
    return pipeline.probe_batch(data, idx, stats, seed=0), stats


def test_action_is_pad_marks_the_steps_past_each_episode_end(written):
    from fontaine_engine import corpus

    data = corpus.load(written["root"])
    assert data.chunk == 8
    want = np.concatenate(
        [np.arange(n)[:, None] + np.arange(8)[None, :] >= n for n in LENGTHS]
    )  # lerobot: the queried index beyond the episode's last frame
    assert np.array_equal(data.action_is_pad, want)
    # the padded steps repeat the episode's last action, as lerobot's clamped query does
    last = np.concatenate(
        [np.repeat(a[-1:], n, 0) for a, n in zip(written["actions"], LENGTHS, strict=True)]
    )
    pad = data.action_is_pad
    assert np.array_equal(data.actions[pad], np.repeat(last[:, None], 8, 1)[pad])
    batch, _ = _batch(data, np.arange(len(want)))
    assert np.array_equal(batch["action_is_pad"].numpy(), want)


def test_padded_steps_count_in_no_loss_and_no_eval_error(written):
    """Changing a padded step's target changes neither loss nor the eval probe's MAE; changing
    a step inside the episode does."""
    from fontaine_engine import corpus, distributed, evaluate

    data = corpus.load(written["root"])
    idx = np.flatnonzero(data.action_is_pad.any(axis=1))
    batch, stats = _batch(data, idx)
    model = _policy(data).eval()
    pad = batch["action_is_pad"]

    def losses(b):
        with torch.no_grad():
            out = model(b)
        return float(out["ar_ce"]), float(out["flow_loss"])

    # a padded step's target moved, the flow decoder's input x_t = t*noise + (1-t)*action
    # kept: noise moved by -5(1-t)/t where the action moves by 5
    moved = dict(batch)
    step = pad[..., None].float() * 5.0
    t = batch["flow_t"][..., None, None]
    moved["actions"] = batch["actions"] + step
    moved["flow_noise"] = batch["flow_noise"] - step[:, None] * (1 - t) / t
    moved["tokens"] = torch.where(
        pad.repeat_interleave(data.motors, 1), (batch["tokens"] + 97) % 256, batch["tokens"]
    )
    assert losses(moved) == pytest.approx(losses(batch), rel=1e-6)
    inside = dict(batch)
    inside["actions"] = batch["actions"] + 5.0
    assert losses(inside)[1] != pytest.approx(losses(batch)[1], rel=1e-3)

    ctx = distributed.Context(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))
    probe = evaluate.Probe(data, idx, stats, 0, ctx)
    before = probe.score(model)["mae"]
    probe.batch["raw_actions"] = torch.where(
        pad[..., None], probe.batch["raw_actions"] + 1000.0, probe.batch["raw_actions"]
    )
    assert probe.score(model)["mae"] == pytest.approx(before, rel=1e-9)
