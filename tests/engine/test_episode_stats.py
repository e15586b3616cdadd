"""The per-episode stats of meta/episodes, read back as lerobot's tools read them.

lerobot's split_dataset, delete_episodes and merge_datasets rebuild meta/stats.json from
the `stats/<feature>/<stat>` columns of meta/episodes (dataset_tools.py
_copy_and_reindex_episodes_metadata, then compute_stats.aggregate_stats); a dataset without
them comes out of those tools with empty stats. Each column is checked here against numpy
over the episode's own frames, and lerobot's pooling of them against the whole dataset.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pq = pytest.importorskip("pyarrow.parquet")
pytestmark = pytest.mark.engine

CAMERA = "observation.images.top"
SCALARS = ("timestamp", "frame_index", "episode_index", "index", "task_index")
STATS = ("min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99")
QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}


def _expected(values: np.ndarray) -> dict[str, np.ndarray]:
    v = values.astype(np.float64)
    out = {"min": v.min(0), "max": v.max(0), "mean": v.mean(0), "std": v.std(0)}
    out.update({k: np.quantile(v, q, axis=0) for k, q in QUANTILES.items()})
    return out


def _aggregate(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """compute_stats.aggregate_feature_stats (lerobot 0.6.1): min, max, mean, std, count."""
    means = np.stack([p["mean"] for p in parts])
    variances = np.stack([p["std"] ** 2 for p in parts])
    counts = np.stack([p["count"] for p in parts])
    total = counts.sum(axis=0)
    while counts.ndim < means.ndim:
        counts = np.expand_dims(counts, -1)
    mean = (means * counts).sum(0) / total
    var = ((variances + (means - mean) ** 2) * counts).sum(0) / total
    return {
        "min": np.min(np.stack([p["min"] for p in parts]), 0),
        "max": np.max(np.stack([p["max"] for p in parts]), 0),
        "mean": mean,
        "std": np.sqrt(var),
        "count": total,
    }


@pytest.mark.parametrize("name", ["demos", "rig"])
def test_episode_stats_columns_match_each_episode(corpus_dir, name):
    from fontaine_engine import lerobot, videos

    root = corpus_dir / name
    episodes = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet")
    features = (CAMERA, "observation.state", "action", *SCALARS)
    want = {f"stats/{f}/{s}" for f in features for s in STATS}
    assert want <= set(episodes.column_names), sorted(want - set(episodes.column_names))
    rows = episodes.to_pylist()
    data = pq.read_table(root / "data/chunk-000/file-000.parquet")
    ds = lerobot.read(root)
    images = videos.frames(ds, 32, CAMERA)
    columns = {
        "observation.state": np.asarray(data.column("observation.state").to_pylist()),
        "action": np.asarray(data.column("action").to_pylist()),
        **{k: data.column(k).to_numpy()[:, None] for k in SCALARS},
    }
    parts: dict[str, list[dict[str, np.ndarray]]] = {f: [] for f in features}
    for row in rows[:: max(1, len(rows) // 40)] + rows[-1:]:  # 40-odd episodes, the last too
        a, b = row["dataset_from_index"], row["dataset_to_index"]
        assert row["stats/action/count"] == [b - a] == [row["length"]]
        pixels = images[a:b].reshape(-1, 3) / 255.0
        for key, expected in [(CAMERA, _expected(pixels))] + [
            (k, _expected(v[a:b])) for k, v in columns.items()
        ]:
            for stat, value in expected.items():
                got = np.asarray(row[f"stats/{key}/{stat}"], np.float64)
                if key == CAMERA:
                    assert got.shape == (3, 1, 1), (key, stat)  # lerobot's image stats shape
                np.testing.assert_allclose(got.reshape(-1), value, rtol=1e-9, atol=1e-12)
    for row in rows:  # lerobot's pooling over every episode gives the dataset's stats
        for f in features:
            parts[f].append(
                {s: np.asarray(row[f"stats/{f}/{s}"], np.float64) for s in STATS if s[0] != "q"}
            )
    stats = json.loads((root / "meta/stats.json").read_text())
    for key in ("observation.state", "action"):
        pooled = _aggregate(parts[key])
        for stat in ("min", "max", "mean", "std", "count"):
            np.testing.assert_allclose(pooled[stat], stats[key][stat], rtol=1e-6, atol=1e-6)
    camera = _aggregate(parts[CAMERA])
    assert camera["count"].tolist() == [len(images)] and camera["mean"].shape == (3, 1, 1)
    np.testing.assert_allclose(
        camera["mean"].reshape(-1), images.reshape(-1, 3).mean(0) / 255.0, rtol=1e-9
    )
