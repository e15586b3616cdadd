"""The corpus as LeRobotDataset v3.0 folders: written field by field as lerobot writes them,
read back bit for bit, reused, rebuilt when corrupt; the probe frames fixed per corpus.

lerobot itself cannot be installed beside this engine's torch (lerobot 0.4 pins torch < 2.11),
so the layout is checked field by field against lerobot's own constants and column names
(lerobot/datasets/utils.py, dataset_metadata.py), with pyarrow and pandas reading the files
the way lerobot reads them.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("torch")
pq = pytest.importorskip("pyarrow.parquet")
pytestmark = pytest.mark.engine


def test_cache_is_reused(corpus_dir):
    from fontaine_engine import corpus, synthetic

    assert corpus.ensure(corpus_dir) is False
    data = corpus.load(corpus_dir)
    assert data.names == ("demos", "rig") and data.fps == 10
    assert data.images[0].shape[1:] == (synthetic.IMAGE_SIZE, synthetic.IMAGE_SIZE, 3)
    assert data.actions.shape[1:] == (8, 6) and data.chunk == corpus.chunk_for(10) == 8
    assert set(np.unique(data.dataset)) == {0, 1}
    ev = data.eval_draw()
    assert len(ev) == 256 and np.array_equal(ev, data.eval_draw())
    assert set(data.split[ev]) == {1} and set(data.split[data.train_slice()]) == {0}
    assert not set(data.episode[ev]) & set(data.episode[data.train_index])


def test_layout_field_by_field(corpus_dir):
    """What lerobot's LeRobotDatasetMetadata and LeRobotDataset read from a v3.0 folder."""
    pd = pytest.importorskip("pandas")
    root = corpus_dir / "demos"
    info = json.loads((root / "meta/info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["fps"] == 10
    assert info["data_path"] == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    assert (
        info["video_path"] == "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
    )
    assert info["total_episodes"] == 480 and info["total_frames"] == 480 * 32
    assert info["total_tasks"] == 1 and info["splits"] == {"train": "0:432", "eval": "432:480"}
    for key in ("chunks_size", "data_files_size_in_mb", "video_files_size_in_mb", "robot_type"):
        assert key in info
    feats = info["features"]
    cam = feats["observation.images.top"]
    assert cam["dtype"] == "video" and cam["shape"] == [32, 32, 3]
    assert cam["names"] == ["height", "width", "channels"]
    assert cam["info"]["video.codec"] == "h264" and cam["info"]["video.fps"] == 10
    assert cam["info"]["video.pix_fmt"] == "yuv444p" and cam["info"]["video.crf"] == 0
    assert cam["info"]["video.height"] == 32 and cam["info"]["has_audio"] is False
    for key in ("observation.state", "action"):
        assert feats[key]["dtype"] == "float32" and feats[key]["shape"] == [6]
        assert feats[key]["names"][0] == "shoulder_pan.pos" and len(feats[key]["names"]) == 6
    for key in ("timestamp", "frame_index", "episode_index", "index", "task_index"):
        assert feats[key]["shape"] == [1]

    tasks = pd.read_parquet(root / "meta/tasks.parquet")  # lerobot: load_tasks
    tasks.index.name = "task"
    assert list(tasks.index) == ["Grasp the red or orange object and lift it."]
    assert tasks["task_index"].tolist() == [0]

    episodes = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert len(episodes) == 480
    e1 = episodes[1]
    assert e1["episode_index"] == 1 and e1["length"] == 32 and e1["tasks"] == [tasks.index[0]]
    assert (e1["dataset_from_index"], e1["dataset_to_index"]) == (32, 64)
    assert (e1["data/chunk_index"], e1["data/file_index"]) == (0, 0)
    v = "videos/observation.images.top/"
    assert (e1[v + "chunk_index"], e1[v + "file_index"]) == (0, 0)
    assert e1[v + "from_timestamp"] == pytest.approx(3.2) and e1[
        v + "to_timestamp"
    ] == pytest.approx(6.4)

    data = pq.ParquetFile(root / "data/chunk-000/file-000.parquet")
    assert data.metadata.num_row_groups == 480  # one row group per episode
    table = data.read()
    assert table.schema.field("observation.state").type.list_size == 6
    assert table.column("index").to_pylist() == list(range(480 * 32))
    assert table.column("timestamp").to_pylist()[32:34] == pytest.approx([0.0, 0.1])
    assert table.column("frame_index").to_pylist()[32:34] == [0, 1]

    stats = json.loads((root / "meta/stats.json").read_text())
    for key in ("min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99"):
        assert len(stats["action"][key]) == (1 if key == "count" else 6), key
    assert np.asarray(stats["observation.images.top"]["mean"]).shape == (3, 1, 1)
    assert stats["action"]["count"] == [480 * 32]


def test_frames_and_vectors_read_back_exactly(corpus_dir):
    """h264 yuv444p at crf 0 of frames at the colour round trip's fixed point: the reader
    returns the generated frames bit for bit, each aligned to its row by timestamp."""
    from fontaine_engine import corpus, synthetic

    gen = synthetic.generate(0)
    data = corpus.load(corpus_dir)
    assert np.array_equal(data.images[0], np.concatenate(gen["demos"].frames + gen["rig"].frames))
    assert np.array_equal(data.states, np.concatenate(gen["demos"].states + gen["rig"].states))
    # the chunk at a frame: its own action and the next ones, the last repeated past the end
    acts = gen["rig"].actions[5]
    row = len(gen["demos"].frames) * 32 + 5 * 32 + 28
    assert np.array_equal(data.actions[row], acts[[28, 29, 30, 31, 31, 31, 31, 31]])


def test_datasets_differ_visibly(corpus_dir):
    from fontaine_engine import corpus

    data = corpus.load(corpus_dir)
    demos = data.images[0][data.dataset == 0][:500].reshape(-1, 3).mean(0)
    rig = data.images[0][data.dataset == 1][:500].reshape(-1, 3).mean(0)
    assert np.abs(demos - rig).max() > 40  # mean colour differs by > 40/255


def test_datasets_choose_training_frames_not_the_eval_draw(corpus_dir):
    from fontaine_engine import corpus

    both, demos = corpus.load(corpus_dir), corpus.load(corpus_dir, ["demos"])
    assert set(demos.dataset[demos.train_index]) == {0}
    assert set(both.dataset[both.train_index]) == {0, 1}
    assert np.array_equal(both.eval_draw(), demos.eval_draw())
    assert set(demos.dataset[demos.eval_draw()]) == {0, 1}  # the breakdown still covers rig
    assert set(demos.dataset[demos.train_slice()]) == {0}
    # the datasets' own stats differ from the pooled ones, and from a recompute on the split
    assert not np.allclose(demos.stats().action_q99, both.stats().action_q99)
    assert not np.allclose(demos.stats().state_mean, demos.recomputed_stats().state_mean)
    with pytest.raises(corpus.CorpusError, match="tabletop not found"):
        corpus.load(corpus_dir, ["demos", "tabletop"])


def test_a_single_lerobot_dataset_is_read_in_place_and_resized(tmp_path, corpus_dir, frame_cache):
    """A user's dataset: read (never written), frames resized to the model's size into the
    frame cache outside the folder; no eval split -> a fixed tenth of the episodes held out."""
    from fontaine_engine import corpus
    from tests.engine.test_data_safety import _tree

    user = tmp_path / "my_so101"
    shutil.copytree(corpus_dir / "rig", user)
    info = json.loads((user / "meta/info.json").read_text())
    info["splits"] = {"train": "0:240"}
    (user / "meta/info.json").write_text(json.dumps(info))
    before = _tree(user)
    assert corpus.check_dir(user) == "use" and corpus.ensure(user) is False
    data = corpus.load(user, image_size=16)
    assert data.names == ("my_so101",) and data.images[0].shape == (240 * 32, 16, 16, 3)
    held = set(data.episode[data.split == 1])
    assert len(held) == 24 and held == set(
        corpus.load(user, image_size=16).episode[corpus.load(user, image_size=16).split == 1]
    )
    assert _tree(user) == before
    assert any(p.name.startswith("my_so101-") for p in frame_cache.iterdir())


def test_a_v21_dataset_is_read(tmp_path, corpus_dir):
    """v2.1: meta/episodes.jsonl and tasks.jsonl, one parquet and one mp4 per episode."""
    import pyarrow as pa

    from fontaine_engine import corpus, lerobot

    src = lerobot.read(corpus_dir / "demos")
    root = tmp_path / "old_format"
    (root / "meta").mkdir(parents=True)
    info = dict(
        src.info,
        codebase_version="v2.1",
        data_path="data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
        video_path="videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
    )
    info.pop("splits")
    (root / "meta/info.json").write_text(json.dumps(info))
    (root / "meta/tasks.jsonl").write_text(json.dumps({"task_index": 0, "task": "grasp"}) + "\n")
    frames = corpus.load(corpus_dir).images[0]
    import av

    with open(root / "meta/episodes.jsonl", "w") as f:
        for ep in range(3):
            f.write(json.dumps({"episode_index": ep, "tasks": ["grasp"], "length": 32}) + "\n")
            rows = slice(ep * 32, ep * 32 + 32)
            path = root / f"data/chunk-000/episode_{ep:06d}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(
                pa.table(
                    {
                        "observation.state": src.state[rows].tolist(),
                        "action": src.action[rows].tolist(),
                        "timestamp": src.timestamp[rows] - src.timestamp[rows][0],
                        "episode_index": np.full(32, ep),
                    }
                ),
                path,
            )
            video = root / f"videos/chunk-000/observation.images.top/episode_{ep:06d}.mp4"
            video.parent.mkdir(parents=True, exist_ok=True)
            with av.open(str(video), "w") as out:
                stream = out.add_stream("libx264rgb", rate=10)
                stream.width = stream.height = 32
                stream.pix_fmt, stream.options = "rgb24", {"crf": "0"}
                for img in frames[rows]:
                    for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                        out.mux(packet)
                for packet in stream.encode():
                    out.mux(packet)
    data = corpus.load(root)
    assert data.images[0].shape[0] == 96 and np.array_equal(data.images[0], frames[:96])
    assert np.array_equal(data.states, src.state[:96])


def test_a_cache_of_the_earlier_format_is_rebuilt_not_read(tmp_path, corpus_dir):
    """Version 2 wrote RGB (gbrp) videos that lerobot's tools cannot re-encode: such a cache
    is rebuilt, and the default folder is a new one."""
    from fontaine_engine import corpus

    root = tmp_path / "corpus-v2"
    shutil.copytree(corpus_dir, root)
    manifest = json.loads((root / "manifest.json").read_text())
    (root / "manifest.json").write_text(json.dumps({**manifest, "version": 2}))
    assert corpus.check_dir(root) == "rebuild" and not corpus._manifest_ok(root, 0)
    assert corpus.default_dir().name == "corpus-v3"


def test_a_bad_dataset_is_one_line(tmp_path, corpus_dir):
    from fontaine_engine import corpus

    root = tmp_path / "ds"
    shutil.copytree(corpus_dir / "demos", root)
    info = json.loads((root / "meta/info.json").read_text())
    del info["features"]["action"]
    (root / "meta/info.json").write_text(json.dumps(info))
    with pytest.raises(corpus.CorpusError, match=r"info.json: features.action: missing"):
        corpus.load(root)


def test_corrupt_and_partial_cache_is_detected_and_rebuilt(tmp_path, corpus_dir):
    from fontaine_engine import corpus

    root = tmp_path / "corpus-v2"
    shutil.copytree(corpus_dir, root)
    path = root / "demos/data/chunk-000/file-000.parquet"
    with open(path, "r+b") as f:  # flip one byte in the payload
        f.seek(-700, 2)
        byte = f.read(1)
        f.seek(-700, 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert corpus.ensure(root) is True
    assert corpus.ensure(root) is False
    fresh, ref = corpus.load(root), corpus.load(corpus_dir)
    assert np.array_equal(fresh.actions, ref.actions) and np.array_equal(
        fresh.images[0], ref.images[0]
    )
    (root / "rig/videos/observation.images.top/chunk-000/file-000.mp4").unlink()  # partial
    assert corpus._manifest_ok(root, 0) is False
    (root / "manifest.json").write_text("{trunc")
    assert corpus._manifest_ok(root, 0) is False
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_an_unknown_dataset_name_is_one_line(tmp_path, corpus_dir, capsys):
    from fontaine_engine.cli import main

    from tests.engine.conftest import tiny_argv

    out = tmp_path / "run"
    assert main(tiny_argv(out, corpus_dir, "--datasets", "demos,pick")[3:]) == 2
    assert capsys.readouterr().err.strip() == (
        f"engine: error: --datasets demos,pick: pick not found under {corpus_dir} "
        "(expected some of: demos,rig)"
    )
    assert not out.exists()
