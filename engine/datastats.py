"""A dataset's state and action stats: those it wrote, the missing ones computed from its frames.

A LeRobotDataset does not always hold what normalisation needs: a v2.1 dataset has no
meta/stats.json (only per-episode min/max/mean/std/count), and a dataset converted to v3.0
by lerobot's converter has a meta/stats.json without quantiles. Every stat of
`observation.state` and `action` that is missing is computed over all the dataset's frames:
min, max, mean, std, count and exact quantiles (np.quantile). Quantiles are never taken
from per-episode quantiles pooled (lerobot's aggregate, which can lie far inside or outside
the dataset's own). What was read and what was computed is said per dataset (the run's
`meta` record).
"""

from __future__ import annotations

import numpy as np

from .lerobot import ACTION_KEY, QUANTILES, STATE_KEY, Dataset, DatasetError

STATS = ("min", "max", "mean", "std", "count") + tuple(f"q{round(q * 100):02d}" for q in QUANTILES)
# Exact q01/q99 leave 1 % of the values beyond each side. Quantiles pooled over datasets or
# episodes (the reference corpus's) leave a few percent; warn only when a side passes 5 %.
CLIP_SHARE = 0.05


def feature_stats(values: np.ndarray) -> dict[str, list]:
    """min, max, mean, std, count and the quantiles of (N, D) values, per dimension."""
    v = np.asarray(values, dtype=np.float64)
    out = {
        "min": v.min(axis=0),
        "max": v.max(axis=0),
        "mean": v.mean(axis=0),
        "std": v.std(axis=0),
        "count": np.array([len(v)]),
    }
    for q, value in zip(QUANTILES, np.quantile(v, list(QUANTILES), axis=0), strict=True):
        out[f"q{int(round(q * 100)):02d}"] = value
    return {k: np.asarray(x).tolist() for k, x in out.items()}


def complete(ds: Dataset) -> tuple[dict, dict]:
    """The dataset's stats with every missing state or action stat computed from its frames.

    It also says where each came from: {"file", "read": {feature: [stat]}, "computed": ...}.

    A stat that is present but not the feature's size (or not finite) is a DatasetError naming
    the file and the key."""
    stats = dict(ds.stats)
    origin: dict = {"file": ds.stats_file, "read": {}, "computed": {}}
    for key, values in ((STATE_KEY, ds.state), (ACTION_KEY, ds.action)):
        have = ds.stats.get(key)
        have = have if isinstance(have, dict) else {}
        entry: dict[str, list] = {}
        computed: dict[str, list] | None = None
        for name in STATS:
            if name in have:
                entry[name] = _checked(ds, key, name, have[name], values.shape[1])
                origin["read"].setdefault(key, []).append(name)
            else:
                computed = computed or feature_stats(values)
                entry[name] = computed[name]
                origin["computed"].setdefault(key, []).append(name)
        stats[key] = entry
    return stats, origin


def _checked(ds: Dataset, key: str, name: str, value: object, size: int) -> list:
    want = 1 if name == "count" else size
    try:
        arr = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        arr = np.zeros(0)
    if arr.size != want or not np.isfinite(arr).all():
        raise DatasetError(
            f"{ds.root / (ds.stats_file or '')}: {key}.{name}: expected {want} finite "
            f"number{'s' if want > 1 else ''}, got {str(value)[:60]}"
        )
    return arr.tolist()


def beyond(actions: np.ndarray, q01: np.ndarray, q99: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per action dimension, the share of the values below q01 and above q99."""
    flat = np.asarray(actions).reshape(-1, actions.shape[-1])
    if not len(flat):
        return np.zeros(flat.shape[1]), np.zeros(flat.shape[1])
    return (flat < q01).mean(axis=0), (flat > q99).mean(axis=0)


def clip_warning(
    actions: np.ndarray, q01: np.ndarray, q99: np.ndarray, names: list[str], source: str
) -> str | None:
    """One line when the q01/q99 clip too many action targets in some dimension, else None.

    The line is given when they leave more than CLIP_SHARE of the action targets beyond one
    side in some dimension (the AR tokens saturate there); None when they do not.
    """
    low, high = beyond(actions, q01, q99)
    worst = int(np.argmax(np.maximum(low, high)))
    if max(low[worst], high[worst]) <= CLIP_SHARE:
        return None
    name = names[worst] if worst < len(names) else f"dimension {worst}"
    return (
        f"stats from {source} leave {100 * (low[worst] + high[worst]):.1f}% of the train "
        f"action targets of {name} beyond q01/q99 ({100 * low[worst]:.1f}% below, "
        f"{100 * high[worst]:.1f}% above; exact quantiles leave 1% each side): its AR tokens "
        "saturate at the edge bins; --recompute-stats computes exact ones from the data"
    )
