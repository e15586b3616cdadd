"""What reaches the model from a LeRobotDataset: the padded steps of an action chunk
(action_is_pad), every camera, image features and the task text, checked against what was
written in lerobot's format."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

LENGTHS = (10, 5, 12)  # frames per episode: at 10 fps a chunk of 8 runs past every end
SIZE = 32  # the engine's image size: lossless videos read back bit for bit
FPS = 10


def _frames(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, SIZE, SIZE, 3), dtype=np.uint8)


FRONT, WRIST, SIDE = (
    "observation.images.front",
    "observation.images.wrist",
    "observation.images.side",
)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A three-episode v3.0 dataset written with the engine's lerobot writer, its data and
    video files split across two files, with a second video camera (wrist) and an image
    feature (side: PNG structs in the frame tables) added as lerobot lays them out."""
    from fontaine_engine import lerobot_writer, synthetic, yuvframes

    base = tmp_path_factory.mktemp("inputs")
    root = base / "ds"
    rng = np.random.default_rng(7)
    states = [rng.normal(size=(n, 6)).astype(np.float32) * 30 for n in LENGTHS]
    actions = [rng.normal(size=(n, 6)).astype(np.float32) * 30 for n in LENGTHS]
    cams = {  # the writer takes frames that read back exactly from yuv444p video
        key: [yuvframes.stable(_frames(10 * k + i, n)) for i, n in enumerate(LENGTHS)]
        for k, key in enumerate((FRONT, WRIST, SIDE), 1)
    }
    tasks = ["Pick up the cube.", "Stack the red block on the blue one.", "Pick up the cube."]
    common = dict(
        fps=FPS,
        states=states,
        actions=actions,
        tasks=tasks,
        state_names=synthetic.STATE_NAMES,
        robot_type="so101_follower",
        episodes_per_file=2,
    )
    lerobot_writer.write(root, camera=FRONT, frames_by_episode=cams[FRONT], **common)
    lerobot_writer.write(base / "wrist", camera=WRIST, frames_by_episode=cams[WRIST], **common)
    add_video_camera(root, base / "wrist", WRIST)
    add_image_feature(root, SIDE, cams[SIDE])
    return {"root": root, "actions": actions, "cams": cams, "tasks": tasks}


def add_video_camera(root, other, key: str) -> None:
    """Another camera's videos, episode columns, feature (first in info.json) and stats."""
    import shutil

    import pyarrow.parquet as pq

    shutil.copytree(other / "videos" / key, root / "videos" / key)
    for path in sorted((root / "meta/episodes").rglob("*.parquet")):
        table = pq.read_table(path)
        theirs = pq.read_table(other / path.relative_to(root))
        for name in theirs.column_names:
            if name.startswith(f"videos/{key}/"):
                table = table.append_column(name, theirs.column(name))
        pq.write_table(table, path)
    info = json.loads((root / "meta/info.json").read_text())
    their_info = json.loads((other / "meta/info.json").read_text())
    info["features"] = {key: their_info["features"][key], **info["features"]}
    (root / "meta/info.json").write_text(json.dumps(info, indent=4))
    stats = json.loads((root / "meta/stats.json").read_text())
    stats[key] = json.loads((other / "meta/stats.json").read_text())[key]
    (root / "meta/stats.json").write_text(json.dumps(stats, indent=1))


def add_image_feature(root, key: str, frames_by_episode) -> None:
    """An image feature as lerobot stores it: each frame a PNG (PIL, as lerobot saves them)
    embedded in the frame table as a {bytes, path} struct (the datasets library's Image)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    pngs = []
    for ep, frames in enumerate(frames_by_episode):
        for i, img in enumerate(frames):
            buf = io.BytesIO()
            Image.fromarray(img).save(buf, format="png")
            pngs.append({"bytes": buf.getvalue(), "path": f"frame-{ep:06d}-{i:06d}.png"})
    struct = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    hf = {"info": {"features": {key: {"_type": "Image"}}}}
    for path in sorted((root / "data").rglob("*.parquet")):
        table = pq.read_table(path)
        index = table.column("index").to_numpy()
        table = table.append_column(key, pa.array([pngs[i] for i in index], struct))
        meta = dict(table.schema.metadata or {})
        meta[b"huggingface"] = json.dumps(hf).encode()
        pq.write_table(table.replace_schema_metadata(meta), path)
    info = json.loads((root / "meta/info.json").read_text())
    h, w = frames_by_episode[0].shape[1:3]
    info["features"][key] = {
        "dtype": "image",
        "shape": [h, w, 3],
        "names": ["height", "width", "channels"],
    }
    (root / "meta/info.json").write_text(json.dumps(info, indent=4))


def _policy(data):
    from fontaine_engine.model import Policy

    torch.manual_seed(0)
    return Policy(
        "tiny", data.chunk, data.motors, int(data.states.shape[1]), cameras=len(data.cameras)
    )


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


def _pixels(frames: np.ndarray) -> torch.Tensor:
    """Written uint8 frames (B, H, W, 3) as the vision encoder's input."""
    return torch.from_numpy(frames.astype(np.float32) / 127.5 - 1.0).permute(0, 3, 1, 2)


def _seen_by_vision(model, batch) -> torch.Tensor:
    seen = []
    hook = model.vision.register_forward_hook(
        lambda _m, _a, kw, _o: seen.append(kw["pixel_values"]), with_kwargs=True
    )
    try:
        out = model(batch)
    finally:
        hook.remove()
    out["loss"].backward()
    return seen[0]


def test_every_chosen_camera_reaches_the_vision_encoder_in_order(written):
    """--cameras front,wrist: both videos' frames, as written, encoded per camera; their tokens
    concatenated into the prefix with a learned camera embedding."""
    from fontaine_engine import corpus

    data = corpus.load(written["root"], cameras=[FRONT, WRIST])
    assert data.cameras == (FRONT, WRIST)
    for key, frames in zip(data.cameras, data.images, strict=True):
        assert np.array_equal(frames, np.concatenate(written["cams"][key]))
    idx = np.array([0, 3, 11, 26])
    batch, _ = _batch(data, idx)
    model = _policy(data)
    seen = _seen_by_vision(model, batch)
    want = [_pixels(np.concatenate(written["cams"][k])[idx]) for k in (FRONT, WRIST)]
    assert torch.equal(seen, torch.stack(want, 1).flatten(0, 1))  # sample-major, camera order
    assert model.prefix_len == 2 * 16 + 1
    grad = model.camera_embed.weight.grad
    assert grad is not None and grad.shape[0] == 2 and bool((grad.abs().sum(1) > 0).all())
    swapped = corpus.load(written["root"], cameras=[WRIST, FRONT])
    assert swapped.cameras == (WRIST, FRONT)
    assert np.array_equal(swapped.images[0], data.images[1])
    with pytest.raises(
        corpus.CorpusError, match="features.observation.images.top: expected a camera"
    ):
        corpus.load(written["root"], cameras=["observation.images.top"])


def test_a_camera_the_data_lacks_is_one_line_before_anything_runs(written, tmp_path):
    from tests.engine.conftest import check_flags, tiny_argv

    bad = tiny_argv(tmp_path / "out", written["root"], "--cameras", "observation.images.top")
    done = check_flags(bad)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "--cameras observation.images.top: observation.images.top not a camera of" in done.stderr
    assert not (tmp_path / "out").exists()


def test_an_image_feature_is_read_from_its_pngs(written, tmp_path):
    """dtype "image": the PNG structs of the frame tables, decoded, reach the encoder; by
    default every camera is read in info.json's order."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from fontaine_engine import corpus

    data = corpus.load(written["root"])
    assert data.cameras == (WRIST, FRONT, SIDE)  # info.json's order
    assert np.array_equal(data.images[2], np.concatenate(written["cams"][SIDE]))
    idx = np.array([1, 9, 10, 20])
    batch, _ = _batch(data, idx)
    seen = _seen_by_vision(_policy(data), batch)
    want = [_pixels(np.concatenate(written["cams"][k])[idx]) for k in (WRIST, FRONT, SIDE)]
    assert torch.equal(seen, torch.stack(want, 1).flatten(0, 1))
    # a PNG that does not decode: one line naming the file, the column and the row
    bad = tmp_path / "bad"
    shutil.copytree(written["root"], bad)
    path = bad / "data/chunk-000/file-001.parquet"
    table = pq.read_table(path)
    rows = table.column(SIDE).to_pylist()
    rows[2] = {"bytes": b"not a png", "path": "x.png"}
    i = table.column_names.index(SIDE)
    table = table.set_column(i, SIDE, pa.array(rows, table.schema.field(SIDE).type))
    pq.write_table(table, path)
    with pytest.raises(
        corpus.CorpusError, match=rf"file-001.parquet: column {SIDE}, row 2: not a readable PNG"
    ):
        corpus.load(bad, cameras=[SIDE])


def _seen_by_backbone(model, batch):
    seen = {}

    def grab(_m, _a, kw):
        seen.update(kw)

    hook = model.backbone.register_forward_pre_hook(grab, with_kwargs=True)
    try:
        with torch.no_grad():
            out = model(batch)
    finally:
        hook.remove()
    return seen, out


def test_each_frames_task_text_reaches_the_backbone_as_tokens(written):
    """The task of each frame (meta/tasks.parquet by the frame's task_index), byte-tokenized,
    truncated to the knob, embedded by the backbone between the image and state tokens, its
    padding masked; another task changes what the model computes."""
    from fontaine_engine import corpus, text

    data = corpus.load(written["root"], cameras=[FRONT])
    per_frame = np.repeat(written["tasks"], LENGTHS)
    assert [data.tasks[t] for t in data.task] == list(per_frame)
    tok = text.for_folder(None)
    data = text.attach(data, tok, 48)
    longest = max(len(t.encode()) for t in written["tasks"])
    assert data.text_ids.shape == (2, longest)
    idx = np.array([0, 12, 14, 20])  # episodes 0, 1, 1, 2
    batch, _ = _batch(data, idx)
    for row, i in enumerate(idx):
        raw = per_frame[i].encode()
        assert batch["text"][row, : len(raw)].tolist() == [text.BYTE0 + b for b in raw]
        assert batch["text_mask"][row].tolist() == [k < len(raw) for k in range(longest)]
    model = _policy(data).eval()
    seen, out = _seen_by_backbone(model, batch)
    images = 16
    with torch.no_grad():
        want = model.backbone.embed_tokens(batch["text"])
    embeds = seen["inputs_embeds"]
    assert torch.equal(embeds[:, images : images + longest], want)
    assert embeds.shape[1] == images + longest + 1 + data.chunk * data.motors
    mask = seen["attention_mask"]  # (B, 1, S, S): True where a position may attend
    short = len(written["tasks"][0].encode())
    assert not mask[0, 0, :, images + short : images + longest].any()  # the padding
    assert mask[1, 0, :, images : images + longest].all()  # the longest task: no padding
    other = dict(
        batch, text=batch["text"][[1, 0, 3, 2]], text_mask=batch["text_mask"][[1, 0, 3, 2]]
    )
    _, moved = _seen_by_backbone(model, other)
    assert float(moved["flow_loss"]) != pytest.approx(float(out["flow_loss"]), rel=1e-6)
    # truncated to the knob; 0: no task text
    assert text.attach(data, tok, 8).text_ids.shape == (2, 8)
    none = text.attach(data, tok, 0)
    assert none.text_ids.shape == (2, 0)
    seen, _ = _seen_by_backbone(model, _batch(none, idx)[0])
    assert seen["inputs_embeds"].shape[1] == images + 1 + data.chunk * data.motors


def test_a_hugging_face_tokenizer_is_used_when_the_init_has_one(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from fontaine_engine import text

    words = ["[UNK]", "Pick", "up", "the", "cube", "."]
    raw = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]").save_pretrained(tmp_path)
    tok = text.for_folder(tmp_path)
    assert tok.source == str(tmp_path)
    assert tok.encode("Pick up the cube.") == [1, 2, 3, 4, 5]
    ids, mask = text.table(["Pick up the cube.", "the cube"], tok, 4)
    assert ids.tolist() == [[1, 2, 3, 4], [3, 4, 0, 0]] and mask.sum(1).tolist() == [4, 2]


def test_a_run_records_its_inputs_and_its_score_reproduces_them(written, tmp_path):
    """`train --cameras front,wrist --task-tokens 16 --history 1`: the meta record and the
    checkpoint name the cameras, the tokenization and the history, and `score` reads the data the same way (its eval record
    is the run's)."""
    import subprocess
    import sys

    from tests.engine.conftest import REPO, engine_env, run_engine, tiny_argv

    out = tmp_path / "run"
    argv = tiny_argv(
        out,
        written["root"],
        "--cameras",
        f"{FRONT},{WRIST}",
        "--task-tokens",
        "16",
        "--history",
        "1",
    )
    argv[argv.index("--steps") + 1] = "4"
    argv[argv.index("--eval-every") + 1] = "4"
    argv[argv.index("--save-every") + 1] = "4"
    done = run_engine(argv)
    assert done.returncode == 0, done.stderr
    records = [json.loads(ln) for ln in (out / "train_log.jsonl").read_text().splitlines()]
    inputs = {
        "cameras": [FRONT, WRIST],
        "text": {"tokenizer": "bytes", "max_tokens": 16, "tokens": 16, "tasks": 2},
    }
    assert records[0]["kind"] == "meta" and records[0]["inputs"] == inputs
    assert records[0]["recipe"]["cameras"] == f"{FRONT},{WRIST}"
    meta = json.loads((out / "checkpoints/step-000004/meta.json").read_text())
    assert meta["inputs"] == inputs
    assert (meta["shape"]["cameras"], meta["shape"]["history"]) == (2, 1)
    scored = tmp_path / "score"
    done = subprocess.run(
        [sys.executable, "-m", "fontaine_engine", "score", "--checkpoints", str(out)]
        + ["--output-dir", str(scored)],
        cwd=REPO,
        env=engine_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    again = [json.loads(ln) for ln in (scored / "train_log.jsonl").read_text().splitlines()]
    ran = next(r for r in records if r["kind"] == "eval")
    rescored = next(r for r in again if r["kind"] == "eval")
    assert rescored["eval_chunk_mae"] == pytest.approx(ran["eval_chunk_mae"], rel=1e-9)


def test_history_gives_each_sample_its_past_frames_and_states(written):
    """--history 2: the frames and states of the two past frames, oldest first, clamped to the
    episode's start and masked there (lerobot's observation delta_timestamps)."""
    import dataclasses

    from fontaine_engine.model import Policy

    from fontaine_engine import corpus

    data = dataclasses.replace(corpus.load(written["root"], cameras=[FRONT]), history=2)
    idx = np.array([0, 1, 5, 10, 11, 16])  # episode 0 at 0, 1, 5; episode 1 at 0, 1; 2 at 1
    pos = np.array([0, 1, 5, 0, 1, 1])
    batch, stats = _batch(data, idx)
    want_pad = pos[:, None] - np.array([2, 1, 0])[None, :] < 0
    assert np.array_equal(batch["observation_is_pad"].numpy(), want_pad)
    rows = np.maximum(idx[:, None] - np.array([2, 1, 0])[None, :], idx[:, None] - pos[:, None])
    state = stats.norm_state(data.states[rows]).astype(np.float32)
    assert np.array_equal(batch["state"].numpy(), state)
    torch.manual_seed(0)
    model = Policy("tiny", data.chunk, data.motors, 6, cameras=1, history=2)
    seen = _seen_by_vision(model, batch)
    front = np.concatenate(written["cams"][FRONT])
    assert torch.equal(seen, _pixels(front[rows.ravel()]))  # sample-major, oldest first
    assert model.prefix_len == 3 * (16 + 1)
    assert model.step_embed.weight.grad is not None
    backbone, _ = _seen_by_backbone(model.eval(), batch)
    mask = backbone["attention_mask"]
    text = int(batch["text"].shape[1])
    past_images = slice(0, 2 * 16)
    past_states = slice(3 * 16 + text, 3 * 16 + text + 2)
    assert not mask[0, 0, :, past_images].any() and not mask[0, 0, :, past_states].any()
    assert mask[2, 0, :, past_images].all() and mask[2, 0, :, past_states].all()
    assert mask[1, 0, :, 16:32].all() and not mask[1, 0, :, 0:16].any()
