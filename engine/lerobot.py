"""LeRobotDataset folders on disk: the reader the engine trains from, and the writer of the
generated corpus (so the reader that trains here is the one that reads a dataset from the hub).

Layout (codebase_version v3.0, as lerobot writes it):

    meta/info.json                      fps, features (dtype, shape, names), path templates, splits
    meta/stats.json                     per feature: min, max, mean, std, count, q01 ... q99
    meta/tasks.parquet                  task (the pandas index) -> task_index
    meta/episodes/chunk-000/file-000.parquet
                                        one row per episode: length, dataset_from/to_index,
                                        data/chunk_index, data/file_index, and per camera
                                        videos/KEY/chunk_index, file_index, from/to_timestamp
    data/chunk-000/file-000.parquet     one row per frame: observation.state, action, timestamp,
                                        frame_index, episode_index, index, task_index
    videos/KEY/chunk-000/file-000.mp4   the camera's frames, several episodes per file

v2.1 folders are read too: meta/episodes.jsonl and meta/tasks.jsonl, one parquet and one mp4
per episode (`data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet`).

Decoding: pyarrow for parquet, PyAV for mp4. The frames a run trains on are decoded once,
resized to the model's image size, into a cache outside the dataset folder
(`$XDG_CACHE_HOME/fontaine-engine/frames/`), keyed by the video files' names, sizes and
modification times; a dataset folder is only ever read. The generated corpus encodes with
libx264rgb at crf 0, which is lossless: the decoded frames are the rendered ones, bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
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
STATE_KEY = "observation.state"
ACTION_KEY = "action"
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
TOLERANCE_S = 1e-4  # lerobot's default: a frame's timestamp must match a video frame this well
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


# --------------------------------------------------------------------------- reading


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
    camera: str
    state: np.ndarray  # (N, S) float32
    action: np.ndarray  # (N, A) float32
    episode_index: np.ndarray  # (N,) int64
    timestamp: np.ndarray  # (N,) float64
    episodes: tuple[Episode, ...]
    splits: dict[str, str]
    stats: dict

    @property
    def name(self) -> str:
        return self.root.name

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


def _features(root: Path, info: dict, camera: str | None) -> str:
    path = root / INFO_PATH
    features = info.get("features")
    if not isinstance(features, dict):
        raise DatasetError(f"{path}: features: expected a table of features")
    for key in (STATE_KEY, ACTION_KEY):
        if key not in features:
            raise DatasetError(
                f"{path}: features.{key}: missing (expected the robot's state and action vectors)"
            )
    cameras = [k for k, f in features.items() if isinstance(f, dict) and f.get("dtype") == "video"]
    images = [k for k, f in features.items() if isinstance(f, dict) and f.get("dtype") == "image"]
    if camera:
        if camera not in cameras:
            raise DatasetError(
                f"{path}: features.{camera}: expected a camera stored as video "
                f"(video features: {', '.join(cameras) or 'none'})"
            )
        return camera
    if not cameras:
        what = f"; image features ({', '.join(images)}) are not read" if images else ""
        raise DatasetError(
            f'{path}: features: expected a camera stored as video (dtype "video"){what}'
        )
    return sorted(cameras)[0]


def read(root: Path, camera: str | None = None) -> Dataset:
    """The frame table and episodes of one LeRobotDataset folder (v3.0 or v2.x)."""
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
    key = _features(root, info, camera)
    episodes = (
        _episodes_v3(root, info, key)
        if version.startswith("v3.")
        else _episodes_v2(root, info, key)
    )
    columns = (STATE_KEY, ACTION_KEY, "episode_index", "timestamp")
    states, actions, eps, times = [], [], [], []
    for path in _data_files(root, info, episodes, version):
        table = _parquet(path, columns)
        states.append(_matrix(table, STATE_KEY, path))
        actions.append(_matrix(table, ACTION_KEY, path))
        eps.append(np.asarray(table.column("episode_index").to_numpy(), dtype=np.int64))
        times.append(np.asarray(table.column("timestamp").to_numpy(), dtype=np.float64))
    episode_index = np.concatenate(eps) if eps else np.zeros(0, np.int64)
    order = np.argsort(episode_index, kind="stable")  # frames grouped by episode, in order
    state = np.concatenate(states)[order]
    action = np.concatenate(actions)[order]
    episode_index, timestamp = episode_index[order], np.concatenate(times)[order]
    starts = {
        int(e): int(i) for e, i in zip(*np.unique(episode_index, return_index=True), strict=True)
    }
    placed = []
    for ep in episodes:
        if ep.index not in starts:
            raise DatasetError(f"{root}: episode {ep.index} has no frames in data/")
        placed.append(Episode(ep.index, ep.length, starts[ep.index], ep.tasks, ep.video))
    stats = _json(root / STATS_PATH) if (root / STATS_PATH).is_file() else {}
    splits = info.get("splits")
    splits = splits if isinstance(splits, dict) else {}
    return Dataset(
        root=root,
        version=version,
        fps=fps,
        info=info,
        camera=key,
        state=state,
        action=action,
        episode_index=episode_index,
        timestamp=timestamp,
        episodes=tuple(placed),
        splits=dict(splits),
        stats=stats if isinstance(stats, dict) else {},
    )


def _episodes_v3(root: Path, info: dict, camera: str) -> list[Episode]:
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


def _episodes_v2(root: Path, info: dict, camera: str) -> list[Episode]:
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
            }
            out.append(Episode(index, int(row["length"]), 0, tuple(row.get("tasks") or ()), video))
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetError(f"{path}:{n}: expected episode_index and length ({exc})") from None
    return sorted(out, key=lambda e: e.index)


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


# --------------------------------------------------------------------------- frames


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fontaine-engine" / "frames"


def _frames_key(ds: Dataset, size: int) -> str:
    files = sorted({f for ep in ds.episodes for f, _ in ep.video.values()})
    parts = [str(ds.root.resolve()), ds.camera, str(size), str(len(ds.timestamp))]
    for name in files:
        try:
            st = (ds.root / name).stat()
        except OSError as exc:
            raise DatasetError(f"{ds.root / name}: cannot read ({exc.strerror or exc})") from None
        parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def frames(ds: Dataset, size: int, cache: Path | None = None) -> np.ndarray:
    """(N, size, size, 3) uint8 frames of the dataset's camera, row-aligned with the frame
    table; decoded once into the frame cache, then memory-mapped."""
    cache = cache or cache_dir()
    path = cache / f"{ds.name}-{_frames_key(ds, size)}.npy"
    if path.is_file():
        try:
            arr = np.load(path, mmap_mode="r")
            if arr.shape == (len(ds.timestamp), size, size, 3):
                return arr
        except (OSError, ValueError):
            pass
    cache.mkdir(parents=True, exist_ok=True)
    out = np.empty((len(ds.timestamp), size, size, 3), dtype=np.uint8)
    by_file: dict[str, list[Episode]] = {}
    for ep in ds.episodes:
        by_file.setdefault(ep.video[ds.camera][0], []).append(ep)
    for name, eps in by_file.items():
        times, decoded = _decode(ds.root / name, size)
        for ep in eps:
            rows = slice(ep.start, ep.start + ep.length)
            query = ds.timestamp[rows] + ep.video[ds.camera][1]
            at = np.clip(np.searchsorted(times, query - TOLERANCE_S), 0, max(len(times) - 1, 0))
            if not len(times) or np.abs(times[at] - query).max() > TOLERANCE_S:
                worst = float(query[np.argmax(np.abs(times[at] - query))]) if len(times) else 0.0
                raise DatasetError(
                    f"{ds.root / name}: no frame at {worst:.4f} s for episode "
                    f"{ep.index} (expected the episode's timestamps within "
                    f"{TOLERANCE_S} s of a video frame)"
                )
            out[rows] = decoded[at]
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=cache)
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, out)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return np.load(path, mmap_mode="r")


def _decode(path: Path, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Every frame of one video file (presentation time in seconds, RGB frames at size)."""
    import av

    try:
        container = av.open(str(path))
    except (OSError, av.error.FFmpegError) as exc:
        raise DatasetError(f"{path}: not a readable video ({exc})") from None
    times, images = [], []
    with container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        for frame in container.decode(stream):
            if frame.width != size or frame.height != size:
                frame = frame.reformat(width=size, height=size, interpolation="AREA")
            images.append(_rgb(frame))
            times.append(float(frame.time))
    order = np.argsort(times, kind="stable")
    return np.asarray(times)[order], np.stack(images)[order] if images else np.zeros(
        (0, size, size, 3), np.uint8
    )


def _rgb(frame) -> np.ndarray:
    """(H, W, 3) RGB of a decoded frame. Planar GBR (libx264rgb) is read plane by plane:
    exact, and ~8x faster than a colour conversion for small frames."""
    if frame.format.name == "gbrp":
        h, w = frame.height, frame.width
        g, b, r = (np.frombuffer(p, np.uint8).reshape(h, p.line_size)[:, :w] for p in frame.planes)
        return np.stack([r, g, b], axis=-1)
    return frame.to_ndarray(format="rgb24")


# --------------------------------------------------------------------------- writing


def _stats(values: np.ndarray) -> dict[str, list]:
    v = np.asarray(values, dtype=np.float64)
    out = {
        "min": v.min(axis=0),
        "max": v.max(axis=0),
        "mean": v.mean(axis=0),
        "std": v.std(axis=0),
        "count": np.array([len(v)]),
    }
    for q in QUANTILES:
        out[f"q{int(round(q * 100)):02d}"] = np.quantile(v, q, axis=0)
    return {k: np.asarray(x).tolist() for k, x in out.items()}


def _image_stats(images: np.ndarray) -> dict[str, list]:
    """Per channel over all pixels, in [0, 1], shaped (3, 1, 1) as lerobot writes them."""
    flat = images.reshape(-1, 3)
    per = _stats(flat[:: max(1, len(flat) // 200_000)].astype(np.float64) / 255.0)
    return {k: [[[x]] for x in v] if k != "count" else [len(images)] for k, v in per.items()}


TASKS_PANDAS_META = {
    "index_columns": ["task"],
    "column_indexes": [
        {
            "name": None,
            "field_name": None,
            "pandas_type": "unicode",
            "numpy_type": "object",
            "metadata": {"encoding": "UTF-8"},
        }
    ],
    "columns": [
        {
            "name": "task_index",
            "field_name": "task_index",
            "pandas_type": "int64",
            "numpy_type": "int64",
            "metadata": None,
        },
        {
            "name": "task",
            "field_name": "task",
            "pandas_type": "unicode",
            "numpy_type": "object",
            "metadata": None,
        },
    ],
    "creator": {"library": "pyarrow"},
    "pandas_version": "2.2.3",
}


def write(
    root: Path,
    *,
    fps: int,
    camera: str,
    frames_by_episode: Sequence[np.ndarray],
    states: Sequence[np.ndarray],
    actions: Sequence[np.ndarray],
    tasks: Sequence[str],
    state_names: Sequence[str],
    robot_type: str,
    eval_from: int | None = None,
    episodes_per_file: int = 1000,
) -> None:
    """Write a LeRobotDataset v3.0 folder (root must not exist or be empty).

    Episodes [eval_from, end) form the split "eval". Each data/video file holds at most
    episodes_per_file episodes (lerobot splits by megabytes; the layout is the same).
    """
    import av
    import pyarrow as pa
    import pyarrow.parquet as pq

    n_eps = len(frames_by_episode)
    height, width = frames_by_episode[0].shape[1:3]
    task_names = list(dict.fromkeys(tasks))
    motors = len(state_names)
    ep_rows, offset = [], 0
    key = camera
    for file_index, first in enumerate(range(0, n_eps, episodes_per_file)):
        chunk_index = 0
        eps = range(first, min(n_eps, first + episodes_per_file))
        data_rel = DATA_PATH.format(chunk_index=chunk_index, file_index=file_index)
        video_rel = VIDEO_PATH.format(video_key=key, chunk_index=chunk_index, file_index=file_index)
        (root / data_rel).parent.mkdir(parents=True, exist_ok=True)
        (root / video_rel).parent.mkdir(parents=True, exist_ok=True)
        t_file = 0  # frames already in this video file
        vector = pa.list_(pa.float32(), motors)
        with (
            av.open(str(root / video_rel), "w") as out,
            pq.ParquetWriter(
                root / data_rel,
                pa.schema(
                    [
                        (STATE_KEY, vector),
                        (ACTION_KEY, vector),
                        ("timestamp", pa.float32()),
                        ("frame_index", pa.int64()),
                        ("episode_index", pa.int64()),
                        ("index", pa.int64()),
                        ("task_index", pa.int64()),
                    ]
                ),
            ) as writer,
        ):
            stream = out.add_stream("libx264rgb", rate=fps)
            stream.width, stream.height, stream.pix_fmt = width, height, "rgb24"
            stream.options = {"crf": "0", "preset": "ultrafast", "g": "2"}
            for ep in eps:
                length = len(frames_by_episode[ep])
                for img in frames_by_episode[ep]:
                    for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                        out.mux(packet)
                ts = (np.arange(length) / fps).astype(np.float32)
                task_index = task_names.index(tasks[ep])
                writer.write_table(
                    pa.table(
                        {  # one row group per episode, as lerobot writes
                            STATE_KEY: pa.FixedSizeListArray.from_arrays(
                                pa.array(np.asarray(states[ep], np.float32).ravel()), motors
                            ),
                            ACTION_KEY: pa.FixedSizeListArray.from_arrays(
                                pa.array(np.asarray(actions[ep], np.float32).ravel()), motors
                            ),
                            "timestamp": ts,
                            "frame_index": np.arange(length, dtype=np.int64),
                            "episode_index": np.full(length, ep, np.int64),
                            "index": np.arange(offset, offset + length, dtype=np.int64),
                            "task_index": np.full(length, task_index, np.int64),
                        }
                    )
                )
                ep_rows.append(
                    {
                        "episode_index": ep,
                        "tasks": [tasks[ep]],
                        "length": length,
                        "dataset_from_index": offset,
                        "dataset_to_index": offset + length,
                        "data/chunk_index": chunk_index,
                        "data/file_index": file_index,
                        f"videos/{key}/chunk_index": chunk_index,
                        f"videos/{key}/file_index": file_index,
                        f"videos/{key}/from_timestamp": t_file / fps,
                        f"videos/{key}/to_timestamp": (t_file + length) / fps,
                        "meta/episodes/chunk_index": 0,
                        "meta/episodes/file_index": 0,
                    }
                )
                offset += length
                t_file += length
            for packet in stream.encode():
                out.mux(packet)
    episodes_path = root / EPISODES_PATH.format(chunk_index=0, file_index=0)
    episodes_path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(ep_rows), episodes_path)
    tasks_table = pa.table(
        {
            "task_index": pa.array(range(len(task_names)), pa.int64()),
            "task": pa.array(task_names, pa.string()),
        }
    )
    tasks_table = tasks_table.replace_schema_metadata(
        {b"pandas": json.dumps(TASKS_PANDAS_META).encode()}
    )
    pq.write_table(tasks_table, root / TASKS_PATH)
    all_images = np.concatenate(frames_by_episode)
    stats = {
        STATE_KEY: _stats(np.concatenate(states)),
        ACTION_KEY: _stats(np.concatenate(actions)),
        camera: _image_stats(all_images),
    }
    (root / STATS_PATH).write_text(json.dumps(stats, indent=1))
    video_info = _video_info(root / VIDEO_PATH.format(video_key=key, chunk_index=0, file_index=0))
    splits = {"train": f"0:{n_eps if eval_from is None else eval_from}"}
    if eval_from is not None:
        splits["eval"] = f"{eval_from}:{n_eps}"
    names = list(state_names)
    info = {
        "codebase_version": "v3.0",
        "robot_type": robot_type,
        "total_episodes": n_eps,
        "total_frames": offset,
        "total_tasks": len(task_names),
        "chunks_size": 1000,
        "data_files_size_in_mb": 100,
        "video_files_size_in_mb": 200,
        "fps": fps,
        "splits": splits,
        "data_path": DATA_PATH,
        "video_path": VIDEO_PATH,
        "features": {
            camera: {
                "dtype": "video",
                "shape": [int(height), int(width), 3],
                "names": ["height", "width", "channels"],
                "info": video_info,
            },
            STATE_KEY: {"dtype": "float32", "shape": [motors], "names": names},
            ACTION_KEY: {"dtype": "float32", "shape": [motors], "names": names},
            **DEFAULT_FEATURES,
        },
    }
    (root / INFO_PATH).write_text(json.dumps(info, indent=4))


def _video_info(path: Path) -> dict[str, object]:
    """The video.* entries lerobot records from the first video file's stream."""
    import av

    with av.open(str(path)) as f:
        s = f.streams.video[0]
        return {
            "video.height": s.height,
            "video.width": s.width,
            "video.codec": s.codec_context.codec.canonical_name
            if hasattr(s.codec_context.codec, "canonical_name")
            else s.codec_context.name,
            "video.pix_fmt": s.pix_fmt,
            "video.is_depth_map": False,
            "video.fps": int(s.base_rate) if s.base_rate else 0,
            "video.channels": 3,
            "has_audio": False,
        }
