"""Datasets as lerobot writes them, trained on: a v2.1 dataset (no meta/stats.json, only
meta/episodes_stats.jsonl) and the same converted to v3.0 the way lerobot's
convert_dataset_v21_to_v30.py does (meta/stats.json without quantiles). Each trains a few
steps and the stats that reach the model are checked against numpy over what was written.

lerobot cannot be installed beside this engine's torch, so its writers are followed here file
by file: lerobot 0.3.3's LeRobotDataset (utils.py: info.json, episodes.jsonl, tasks.jsonl,
episodes_stats.jsonl, compute_stats.py without quantiles, one parquet and mp4 per episode)
and the v3.0 converter (data and videos concatenated, meta/episodes with the flattened
`stats/<feature>/<stat>` columns, meta/stats.json from aggregate_stats).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
av = pytest.importorskip("av")
pytestmark = pytest.mark.engine

EPISODES, LENGTH, FPS, SIZE = 6, 20, 10, 32
CAMERA = "observation.images.front"
NAMES = [f"motor_{i}.pos" for i in range(6)]


def _episodes():
    rng = np.random.default_rng(7)
    out = []
    for ep in range(EPISODES):
        t = np.arange(LENGTH)[:, None]
        state = (10 * np.sin(t / 4 + ep) + rng.normal(0, 1, (LENGTH, 6))).astype(np.float32)
        action = (state + rng.standard_t(2, (LENGTH, 6)) * 3).astype(np.float32)  # heavy tails
        frames = rng.integers(0, 256, (LENGTH, SIZE, SIZE, 3), dtype=np.uint8)
        out.append((state, action, frames))
    return out


def _stats(values: np.ndarray, image: bool = False) -> dict:
    """lerobot 0.3.3 compute_stats.get_feature_stats (no quantiles)."""
    if image:  # per channel, in [0, 1], shaped (3, 1, 1)
        v = values.astype(np.float64).reshape(-1, 3) / 255.0
        per = {"min": v.min(0), "max": v.max(0), "mean": v.mean(0), "std": v.std(0)}
        return {**{k: x.reshape(3, 1, 1).tolist() for k, x in per.items()}, "count": [len(values)]}
    v = np.asarray(values, dtype=np.float64)
    v = v[:, None] if v.ndim == 1 else v
    return {
        "min": v.min(0).tolist(),
        "max": v.max(0).tolist(),
        "mean": v.mean(0).tolist(),
        "std": v.std(0).tolist(),
        "count": [len(v)],
    }


def _encode(path: Path, frames: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264rgb", rate=FPS)
        stream.width = stream.height = SIZE
        stream.pix_fmt, stream.options = "rgb24", {"crf": "0", "g": "2"}
        for img in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def _features() -> dict:
    scalar = {"shape": [1], "names": None}
    return {
        CAMERA: {
            "dtype": "video",
            "shape": [SIZE, SIZE, 3],
            "names": ["height", "width", "channels"],
            "info": {"video.fps": FPS, "video.codec": "h264", "video.pix_fmt": "gbrp"},
        },
        "observation.state": {"dtype": "float32", "shape": [6], "names": NAMES},
        "action": {"dtype": "float32", "shape": [6], "names": NAMES},
        "timestamp": {"dtype": "float32", **scalar},
        "frame_index": {"dtype": "int64", **scalar},
        "episode_index": {"dtype": "int64", **scalar},
        "index": {"dtype": "int64", **scalar},
        "task_index": {"dtype": "int64", **scalar},
    }


def write_v21(root: Path, episodes) -> None:
    """A v2.1 dataset as lerobot 0.3.3 leaves it: no meta/stats.json."""
    (root / "meta").mkdir(parents=True)
    total = EPISODES * LENGTH
    info = {
        "codebase_version": "v2.1",
        "robot_type": "so101_follower",
        "total_episodes": EPISODES,
        "total_frames": total,
        "total_tasks": 1,
        "total_videos": EPISODES,
        "total_chunks": 1,
        "chunks_size": 1000,
        "fps": FPS,
        "splits": {"train": f"0:{EPISODES}"},
        "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
        "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
        "features": _features(),
    }
    (root / "meta/info.json").write_text(json.dumps(info, indent=4))
    (root / "meta/tasks.jsonl").write_text(json.dumps({"task_index": 0, "task": "grasp"}) + "\n")
    eps, ep_stats = [], []
    for ep, (state, action, frames) in enumerate(episodes):
        ts = (np.arange(LENGTH) / FPS).astype(np.float32)
        cols = {
            "observation.state": state,
            "action": action,
            "timestamp": ts,
            "frame_index": np.arange(LENGTH),
            "episode_index": np.full(LENGTH, ep),
            "index": np.arange(ep * LENGTH, (ep + 1) * LENGTH),
            "task_index": np.zeros(LENGTH, np.int64),
        }
        path = root / f"data/chunk-000/episode_{ep:06d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        vector = pa.list_(pa.float32())
        table = pa.table(
            {
                k: pa.array(v.tolist(), vector) if np.ndim(v) == 2 else pa.array(v)
                for k, v in cols.items()
            }
        )
        pq.write_table(table, path)
        _encode(root / f"videos/chunk-000/{CAMERA}/episode_{ep:06d}.mp4", frames)
        eps.append({"episode_index": ep, "tasks": ["grasp"], "length": LENGTH})
        stats = {k: _stats(v) for k, v in cols.items()}
        stats[CAMERA] = _stats(frames, image=True)
        ep_stats.append({"episode_index": ep, "stats": stats})
    (root / "meta/episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in eps))
    (root / "meta/episodes_stats.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ep_stats))


def _aggregate(parts: list[dict]) -> dict:
    """lerobot's aggregate_feature_stats (no quantiles in the parts: none out)."""
    means = np.stack([np.asarray(p["mean"]) for p in parts])
    counts = np.stack([np.asarray(p["count"]) for p in parts]).astype(np.float64)
    while counts.ndim < means.ndim:
        counts = counts[..., None]
    total = counts.sum(0)
    mean = (means * counts).sum(0) / total
    var = (np.stack([np.asarray(p["std"]) ** 2 for p in parts]) + (means - mean) ** 2) * counts
    return {
        "min": np.min([p["min"] for p in parts], 0).tolist(),
        "max": np.max([p["max"] for p in parts], 0).tolist(),
        "mean": mean.tolist(),
        "std": np.sqrt(var.sum(0) / total).tolist(),
        "count": total.reshape(-1)[:1].astype(int).tolist(),
    }


def convert_v30(src: Path, root: Path, episodes) -> None:
    """What convert_dataset_v21_to_v30.py makes of write_v21's folder."""
    info = json.loads((src / "meta/info.json").read_text())
    info["codebase_version"] = "v3.0"
    del info["total_chunks"], info["total_videos"]
    info.update(
        data_files_size_in_mb=100,
        video_files_size_in_mb=500,
        data_path="data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        video_path="videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
    )
    for ft in info["features"].values():
        if ft["dtype"] != "video":
            ft["fps"] = FPS
    (root / "meta").mkdir(parents=True)
    (root / "meta/info.json").write_text(json.dumps(info, indent=4))
    tables = [pq.read_table(p) for p in sorted((src / "data").glob("*/*.parquet"))]
    (root / "data/chunk-000").mkdir(parents=True)
    pq.write_table(pa.concat_tables(tables), root / "data/chunk-000/file-000.parquet")
    _encode(
        root / f"videos/{CAMERA}/chunk-000/file-000.mp4",
        np.concatenate([frames for _, _, frames in episodes]),
    )
    ep_stats = [
        json.loads(line)["stats"]
        for line in (src / "meta/episodes_stats.jsonl").read_text().splitlines()
    ]
    rows = []
    for ep, stats in enumerate(ep_stats):
        row = {
            "episode_index": ep,
            "data/chunk_index": 0,
            "data/file_index": 0,
            "dataset_from_index": ep * LENGTH,
            "dataset_to_index": (ep + 1) * LENGTH,
            f"videos/{CAMERA}/chunk_index": 0,
            f"videos/{CAMERA}/file_index": 0,
            f"videos/{CAMERA}/from_timestamp": ep * LENGTH / FPS,
            f"videos/{CAMERA}/to_timestamp": (ep + 1) * LENGTH / FPS,
            "tasks": ["grasp"],
            "length": LENGTH,
        }
        for feature, values in stats.items():
            for name, value in values.items():
                row[f"stats/{feature}/{name}"] = value
        row["meta/episodes/chunk_index"] = 0
        row["meta/episodes/file_index"] = 0
        rows.append(row)
    (root / "meta/episodes/chunk-000").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), root / "meta/episodes/chunk-000/file-000.parquet")
    features = ep_stats[0].keys()
    stats = {k: _aggregate([s[k] for s in ep_stats]) for k in features}
    (root / "meta/stats.json").write_text(json.dumps(stats, indent=4))
    tasks = pa.table({"task_index": pa.array([0], pa.int64()), "task": ["grasp"]})
    pq.write_table(tasks, root / "meta/tasks.parquet")


@pytest.fixture(scope="module")
def formats(tmp_path_factory):
    base = tmp_path_factory.mktemp("formats")
    episodes = _episodes()
    write_v21(base / "v21", episodes)
    convert_v30(base / "v21", base / "v30", episodes)
    state = np.concatenate([s for s, _, _ in episodes]).astype(np.float64)
    action = np.concatenate([a for _, a, _ in episodes]).astype(np.float64)
    return base, state, action


def _train(tmp_path: Path, data: Path, *extra: str):
    from tests.engine.conftest import run_engine, tiny_argv

    argv = tiny_argv(tmp_path / "run", data, "--eval-every", "2", "--save-every", "2", steps=2)
    argv.remove("--recompute-stats")
    argv[argv.index("--num-workers") + 1] = "0"
    proc = run_engine([*argv, *extra])
    log = tmp_path / "run/train_log.jsonl"
    records = [json.loads(x) for x in log.read_text().splitlines()] if log.is_file() else []
    return proc, records


@pytest.mark.parametrize(
    "folder, source", [("v21", "meta/episodes_stats.jsonl"), ("v30", "meta/stats.json")]
)
def test_missing_stats_are_computed_and_trained_on(tmp_path, formats, folder, source):
    base, state, action = formats
    proc, records = _train(tmp_path, base / folder)
    assert proc.returncode == 0, proc.stderr
    meta = records[0]["stats"]["datasets"][folder]
    assert meta["file"] == source
    assert meta["read"]["observation.state"] == ["min", "max", "mean", "std", "count"]
    assert meta["computed"]["action"] == ["q01", "q10", "q50", "q90", "q99"]
    stats = json.loads((tmp_path / "run/checkpoints/step-000002/stats.json").read_text())
    np.testing.assert_allclose(stats["state_mean"], state.mean(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(stats["state_std"], state.std(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(stats["action_q01"], np.quantile(action, 0.01, 0), rtol=1e-5)
    np.testing.assert_allclose(stats["action_q99"], np.quantile(action, 0.99, 0), rtol=1e-5)


def test_narrow_quantiles_are_warned_of(tmp_path, formats):
    """Quantiles pooled from episodes' own sit inside the data's: the run says how much of
    the action targets they leave beyond them."""
    base, _, action = formats
    root = tmp_path / "narrow"
    shutil.copytree(base / "v30", root)
    stats = json.loads((root / "meta/stats.json").read_text())
    q = np.quantile(action, [0.10, 0.90], axis=0)
    stats["action"].update(q01=q[0].tolist(), q99=q[1].tolist())
    (root / "meta/stats.json").write_text(json.dumps(stats))
    proc, records = _train(tmp_path, root)
    assert proc.returncode == 0, proc.stderr
    warnings = [r for r in records if r.get("event") == "warning"]
    assert len(warnings) == 1 and "beyond q01/q99" in warnings[0]["detail"]
    [alert] = [r for r in records if r["kind"] == "alert"]  # for the owner: the panel, a post
    assert alert["level"] == "warn" and alert["text"] == warnings[0]["detail"]
    assert "engine: warning: stats from corpus meta/stats.json" in proc.stderr


def test_unreadable_stats_are_one_line_and_exit_2(tmp_path, formats):
    base, _, _ = formats
    root = tmp_path / "bad"
    shutil.copytree(base / "v30", root)
    stats = json.loads((root / "meta/stats.json").read_text())
    stats["action"]["mean"] = [0.0, 1.0]
    (root / "meta/stats.json").write_text(json.dumps(stats))
    proc, _ = _train(tmp_path, root)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        f"engine: error: {root / 'meta/stats.json'}: action.mean: expected 6 finite numbers, "
        "got [0.0, 1.0]"
    )
