"""LeRobotDataset folders on disk: their metadata and frame tables, as the engine reads them.

Layout (codebase_version v3.0, as lerobot writes it):

    meta/info.json                      fps, features (dtype, shape, names), path templates, splits
    meta/stats.json                     per feature: min, max, mean, std, count, q01 ... q99
    meta/tasks.parquet                  task (the pandas index) -> task_index
    meta/episodes/chunk-000/file-000.parquet
                                        one row per episode: length, dataset_from/to_index,
                                        data/chunk_index, data/file_index, and per camera
                                        videos/KEY/chunk_index, file_index, from/to_timestamp
    data/chunk-000/file-000.parquet     one row per frame: observation.state, action, timestamp,
                                        frame_index, episode_index, index, task_index, and
                                        per image feature (dtype "image") a {bytes, path}
                                        struct holding the frame as PNG
    videos/KEY/chunk-000/file-000.mp4   the camera's frames, several episodes per file

v2.1 folders are read too: meta/episodes.jsonl and meta/tasks.jsonl, one parquet and one mp4
per episode (`data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet`).

Parquet is read with pyarrow; the camera's frames are decoded by engine/videos.py, and the
engine's own corpus is written by engine/lerobot_writer.py. A dataset folder is only ever read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

INFO_PATH = "meta/info.json"
STATS_PATH = "meta/stats.json"
TASKS_PATH = "meta/tasks.parquet"
EPISODES_DIR = "meta/episodes"
CHUNK_FILE = "chunk-{chunk_index:03d}/file-{file_index:03d}"
DATA_PATH = "data/" + CHUNK_FILE + ".parquet"
VIDEO_PATH = "videos/{video_key}/" + CHUNK_FILE + ".mp4"
EPISODES_PATH = EPISODES_DIR + "/" + CHUNK_FILE + ".parquet"
LEGACY_EPISODES = "meta/episodes.jsonl"
LEGACY_TASKS = "meta/tasks.jsonl"
LEGACY_EPISODES_STATS = "meta/episodes_stats.jsonl"  # v2.1: per-episode, no meta/stats.json
STATE_KEY = "observation.state"
ACTION_KEY = "action"
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
DEFAULT_FEATURES = {
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}


class DatasetError(ValueError):
    """A dataset folder that cannot be read: the message names the file and what was expected."""


def is_dataset(root: Path) -> bool:
    return (root / INFO_PATH).is_file()


@dataclass(frozen=True, slots=True)
class Episode:
    index: int
    length: int
    start: int  # row of its first frame in the dataset's frame table
    tasks: tuple[str, ...]
    video: dict[str, tuple[str, float]] = field(default_factory=dict)  # key -> (file, from_s)


@dataclass(frozen=True, slots=True)
class Dataset:
    """One LeRobotDataset folder, its frame table in memory (frames are decoded on demand)."""

    root: Path
    version: str
    fps: int
    info: dict
    cameras: tuple[str, ...]  # video and image features read, in order
    state: np.ndarray  # (N, S) float32
    action: np.ndarray  # (N, A) float32
    episode_index: np.ndarray  # (N,) int64
    timestamp: np.ndarray  # (N,) float64
    task: np.ndarray  # (N,) int64: each frame's task, an index into tasks
    tasks: tuple[str, ...]  # the task strings, by task_index
    episodes: tuple[Episode, ...]
    splits: dict[str, str]
    stats: dict  # feature -> stat -> numbers, as read from stats_file
    stats_file: str | None = None  # meta/stats.json, meta/episodes_stats.jsonl, or none
    data_files: tuple[Path, ...] = ()  # the frame tables, in the order they were read
    row_order: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # row_order: frame-table row -> row of the files' concatenation (frames grouped by episode)

    @property
    def name(self) -> str:
        return self.root.name

    def is_video(self, camera: str) -> bool:
        return self.info["features"][camera].get("dtype") == "video"

    @property
    def state_names(self) -> list[str]:
        return list(self.info["features"][STATE_KEY].get("names") or [])

    def eval_episodes(self) -> set[int]:
        """Episodes of the split named "eval" (or "test", "validation"): lerobot's "a:b" ranges."""
        for name in ("eval", "test", "validation", "val"):
            if name in self.splits:
                return set(_split_range(self, name))
        return set()


def _split_range(ds: Dataset, name: str) -> range:
    text = str(ds.splits[name])
    try:
        lo, hi = (int(x) for x in text.split(":"))
    except ValueError:
        raise DatasetError(
            f"{ds.root / INFO_PATH}: splits.{name}: expected 'start:end' episode "
            f"indices, got {text!r}"
        ) from None
    return range(lo, hi)


def _json(path: Path) -> object:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise DatasetError(f"{path}: not JSON ({exc})") from None


def _parquet(path: Path, columns: Sequence[str] | None = None):
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path, columns=list(columns) if columns else None)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise DatasetError(
            f"{path}: not a readable parquet file with columns "
            f"{', '.join(columns or ['*'])} ({exc})"
        ) from None


def _matrix(table, column: str, path: Path) -> np.ndarray:
    """A list/fixed-size-list column as a float32 (N, D) array."""
    import pyarrow as pa

    col = table.column(column).combine_chunks()
    if (
        pa.types.is_fixed_size_list(col.type)
        or pa.types.is_list(col.type)
        or pa.types.is_large_list(col.type)
    ):
        flat = np.asarray(col.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
        n = len(col)
        if n and flat.size % n:
            raise DatasetError(f"{path}: column {column}: rows of unequal length")
        return flat.reshape(n, -1 if n else 0)
    if pa.types.is_floating(col.type) or pa.types.is_integer(col.type):
        return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float32)[:, None]
    raise DatasetError(f"{path}: column {column}: expected a list of numbers, got {col.type}")


CAMERA_DTYPES = ("video", "image")


def cameras_of(info: dict) -> list[str]:
    """The camera features of an info.json (dtype "video" or "image"), in its order."""
    features = info.get("features")
    return [
        k
        for k, f in (features.items() if isinstance(features, dict) else ())
        if isinstance(f, dict) and f.get("dtype") in CAMERA_DTYPES
    ]


def _features(root: Path, info: dict, cameras: Sequence[str] | None) -> tuple[str, ...]:
    """The cameras read: those chosen, in their order, else every camera feature.

    Without a choice they come in info.json's order.
    """
    path = root / INFO_PATH
    features = info.get("features")
    if not isinstance(features, dict):
        raise DatasetError(f"{path}: features: expected a table of features")
    for key in (STATE_KEY, ACTION_KEY):
        if key not in features:
            raise DatasetError(
                f"{path}: features.{key}: missing (expected the robot's state and action vectors)"
            )
    found = cameras_of(info)
    if cameras:
        for camera in cameras:
            if camera not in found:
                raise DatasetError(
                    f"{path}: features.{camera}: expected a camera (dtype video or image; "
                    f"cameras: {', '.join(found) or 'none'})"
                )
        return tuple(cameras)
    if not found:
        raise DatasetError(f'{path}: features: expected a camera (dtype "video" or "image")')
    return tuple(found)


def read(root: Path, cameras: Sequence[str] | None = None) -> Dataset:
    """The frame table and episodes of one LeRobotDataset folder (v3.0 or v2.x).

    It comes with the chosen cameras (default: every video and image feature, in info.json's
    order).
    """
    root = Path(root)
    info = _json(root / INFO_PATH)
    if not isinstance(info, dict):
        raise DatasetError(f"{root / INFO_PATH}: expected a JSON object")
    version = str(info.get("codebase_version", ""))
    if not version.startswith(("v2.", "v3.")):
        raise DatasetError(
            f"{root / INFO_PATH}: codebase_version: expected v2.x or v3.x, got {version or 'none'}"
        )
    try:
        fps = int(info["fps"])
    except (KeyError, TypeError, ValueError):
        fps = 0
    if fps <= 0:
        raise DatasetError(f"{root / INFO_PATH}: fps: expected a positive integer")
    keys = _features(root, info, cameras)
    videos = [k for k in keys if info["features"][k].get("dtype") == "video"]
    episodes = (
        _episodes_v3(root, info, videos)
        if version.startswith("v3.")
        else _episodes_v2(root, info, videos)
    )
    columns = (STATE_KEY, ACTION_KEY, "episode_index", "timestamp")
    states, actions, eps, times, task_parts = [], [], [], [], []
    files = _data_files(root, info, episodes, version)
    tasks = _tasks(root, version)
    for path in files:
        table = _parquet(path, columns)
        states.append(_matrix(table, STATE_KEY, path))
        actions.append(_matrix(table, ACTION_KEY, path))
        eps.append(np.asarray(table.column("episode_index").to_numpy(), dtype=np.int64))
        times.append(np.asarray(table.column("timestamp").to_numpy(), dtype=np.float64))
        task_parts.append(_task_index(path, eps[-1], episodes, tasks))
    episode_index = np.concatenate(eps) if eps else np.zeros(0, np.int64)
    order = np.argsort(episode_index, kind="stable")  # frames grouped by episode, in order
    state = np.concatenate(states)[order]
    action = np.concatenate(actions)[order]
    episode_index, timestamp = episode_index[order], np.concatenate(times)[order]
    task = np.concatenate(task_parts)[order] if task_parts else np.zeros(0, np.int64)
    starts = {
        int(e): int(i) for e, i in zip(*np.unique(episode_index, return_index=True), strict=True)
    }
    placed = []
    for ep in episodes:
        if ep.index not in starts:
            raise DatasetError(f"{root}: episode {ep.index} has no frames in data/")
        placed.append(Episode(ep.index, ep.length, starts[ep.index], ep.tasks, ep.video))
    stats, stats_file = _stats(root)
    splits = info.get("splits")
    splits = splits if isinstance(splits, dict) else {}
    return Dataset(
        root=root,
        version=version,
        fps=fps,
        info=info,
        cameras=keys,
        state=state,
        action=action,
        episode_index=episode_index,
        timestamp=timestamp,
        task=task,
        tasks=tasks,
        episodes=tuple(placed),
        splits=dict(splits),
        stats=stats,
        stats_file=stats_file,
        data_files=tuple(files),
        row_order=order,
    )


def _stats(root: Path) -> tuple[dict, str | None]:
    """The dataset's stats as written: meta/stats.json, or v2.1's episodes' stats pooled.

    v2.1 writes no meta/stats.json: the episodes' stats of meta/episodes_stats.jsonl are
    pooled exactly (min, max, mean, std, count). Per-episode quantiles cannot be pooled into
    the dataset's, so none are taken.
    """
    if (root / STATS_PATH).is_file():
        stats = _json(root / STATS_PATH)
        if not isinstance(stats, dict):
            raise DatasetError(f"{root / STATS_PATH}: expected a JSON object of features")
        return stats, STATS_PATH
    path = root / LEGACY_EPISODES_STATS
    if not path.is_file():
        return {}, None
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror or exc})") from None
    parts: dict[str, list[dict]] = {STATE_KEY: [], ACTION_KEY: []}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = "stats"
        try:
            row = json.loads(line)["stats"]
            for key, found in parts.items():
                entry = {}
                for k in ("min", "max", "mean", "std", "count"):
                    where = f"stats.{key}.{k}"
                    entry[k] = np.asarray(row[key][k], dtype=np.float64).reshape(-1)
                found.append(entry)
        except (KeyError, TypeError, ValueError):
            raise DatasetError(
                f"{path}:{n}: {where}: expected numbers (min, max, mean, std and count of "
                f"{STATE_KEY} and {ACTION_KEY} per episode)"
            ) from None
    if not parts[STATE_KEY]:
        return {}, None
    return {key: _pooled(found) for key, found in parts.items()}, LEGACY_EPISODES_STATS


def _pooled(parts: list[dict]) -> dict[str, list]:
    """Per-episode min/max/mean/std/count pooled into the whole dataset's (exact)."""
    counts = np.array([float(p["count"][0]) for p in parts])
    means = np.stack([p["mean"] for p in parts])
    w = counts[:, None] / counts.sum()
    mean = (w * means).sum(axis=0)
    var = (w * (np.stack([p["std"] for p in parts]) ** 2 + (means - mean) ** 2)).sum(axis=0)
    return {
        "min": np.min([p["min"] for p in parts], axis=0).tolist(),
        "max": np.max([p["max"] for p in parts], axis=0).tolist(),
        "mean": mean.tolist(),
        "std": np.sqrt(var).tolist(),
        "count": [int(counts.sum())],
    }


def _episodes_v3(root: Path, info: dict, cameras: Sequence[str]) -> list[Episode]:
    files = sorted((root / EPISODES_DIR).glob("chunk-*/file-*.parquet"))
    if not files:
        raise DatasetError(
            f"{root / EPISODES_DIR}: expected chunk-NNN/file-NNN.parquet episode tables"
        )
    video_tpl = str(info.get("video_path") or VIDEO_PATH)
    out = []
    for path in files:
        rows = _parquet(path).to_pylist()
        for row in rows:
            try:
                video = {
                    camera: (
                        video_tpl.format(
                            video_key=camera,
                            chunk_index=int(row[f"videos/{camera}/chunk_index"]),
                            file_index=int(row[f"videos/{camera}/file_index"]),
                        ),
                        float(row[f"videos/{camera}/from_timestamp"]),
                    )
                    for camera in cameras
                }
                out.append(
                    Episode(
                        int(row["episode_index"]),
                        int(row["length"]),
                        0,
                        tuple(row.get("tasks") or ()),
                        video,
                    )
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise DatasetError(
                    f"{path}: episode row: missing or bad {exc} (expected "
                    "lerobot v3 episode columns)"
                ) from None
    return sorted(out, key=lambda e: e.index)


def _episodes_v2(root: Path, info: dict, cameras: Sequence[str]) -> list[Episode]:
    path = root / LEGACY_EPISODES
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror or exc})") from None
    chunks = int(info.get("chunks_size") or 1000)
    video_tpl = str(
        info.get("video_path")
        or "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"
    )
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            index = int(row["episode_index"])
            video = {
                camera: (
                    video_tpl.format(
                        video_key=camera, episode_chunk=index // chunks, episode_index=index
                    ),
                    0.0,
                )
                for camera in cameras
            }
            out.append(Episode(index, int(row["length"]), 0, tuple(row.get("tasks") or ()), video))
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetError(f"{path}:{n}: expected episode_index and length ({exc})") from None
    return sorted(out, key=lambda e: e.index)


def _tasks(root: Path, version: str) -> tuple[str, ...]:
    """The task strings by task_index, read from meta/tasks.parquet or meta/tasks.jsonl.

    In meta/tasks.parquet (v3) the task is the pandas index, a column beside task_index;
    meta/tasks.jsonl is v2's. None when the file is absent.
    """
    rows: list[dict] = []
    if version.startswith("v3."):
        if (root / TASKS_PATH).is_file():
            rows = _parquet(root / TASKS_PATH, ["task_index", "task"]).to_pylist()
        where = root / TASKS_PATH
    else:
        where = root / LEGACY_TASKS
        try:
            lines = where.read_text().splitlines() if where.is_file() else []
            rows = [json.loads(ln) for ln in lines if ln.strip()]
        except (OSError, ValueError) as exc:
            raise DatasetError(
                f"{where}: expected JSON lines of task_index and task ({exc})"
            ) from None
    out: dict[int, str] = {}
    for row in rows:
        try:
            out[int(row["task_index"])] = str(row["task"])
        except (KeyError, TypeError, ValueError):
            raise DatasetError(f"{where}: expected task_index and task in every row") from None
    if sorted(out) != list(range(len(out))):
        raise DatasetError(f"{where}: expected task_index 0..{len(out) - 1}, got {sorted(out)}")
    return tuple(out[i] for i in range(len(out)))


def _task_index(
    path: Path, episode_index: np.ndarray, episodes: list[Episode], tasks: tuple[str, ...]
) -> np.ndarray:
    """Each frame's task_index, from the frame table's column.

    A table without one takes its episode's first task.
    """
    import pyarrow.parquet as pq

    if "task_index" in pq.read_schema(path).names:
        index = np.asarray(
            _parquet(path, ["task_index"]).column("task_index").to_numpy(), dtype=np.int64
        )
        if len(index) and (index.min() < 0 or index.max() >= len(tasks)):
            raise DatasetError(
                f"{path}: task_index {int(index.max())}: expected an index into the "
                f"{len(tasks)} task(s) of meta/tasks"
            )
        return index
    by_episode = {
        e.index: (tasks.index(e.tasks[0]) if e.tasks and e.tasks[0] in tasks else -1)
        for e in episodes
    }
    index = np.array([by_episode.get(int(e), -1) for e in episode_index], dtype=np.int64)
    if (index < 0).any():
        raise DatasetError(
            f"{path}: expected a task_index column, or episodes whose first task is in meta/tasks"
        )
    return index


def _data_files(root: Path, info: dict, episodes: list[Episode], version: str) -> list[Path]:
    if version.startswith("v3."):
        found = sorted((root / "data").glob("chunk-*/file-*.parquet"))
        if not found:
            raise DatasetError(f"{root / 'data'}: expected chunk-NNN/file-NNN.parquet frame tables")
        return found
    tpl = str(
        info.get("data_path")
        or "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
    )
    chunks = int(info.get("chunks_size") or 1000)
    return [
        root / tpl.format(episode_chunk=e.index // chunks, episode_index=e.index) for e in episodes
    ]
