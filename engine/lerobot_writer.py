"""The LeRobotDataset v3.0 writer the engine's generated corpus is written with.

It writes the files lerobot's own LeRobotDataset writer writes (meta/info.json,
meta/stats.json, meta/tasks.parquet, meta/episodes/, data/, videos/; the layout is described
in engine/lerobot.py). Videos are h264 yuv444p at crf 0 (engine/yuvframes.py), with the
encoder settings in info.json as lerobot records them, so lerobot's tools re-encode them the
same way. Frames must be a fixed point of the yuv444p round trip (yuvframes.stable()):
decoded, they are then the written ones, bit for bit; any other frame is refused.
meta/episodes holds each episode's `stats/<feature>/<stat>` columns, as lerobot's writer
does: its tools pool them into meta/stats.json when they edit a dataset.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from . import yuvframes
from .datastats import feature_stats
from .lerobot import (
    ACTION_KEY,
    DATA_PATH,
    DEFAULT_FEATURES,
    EPISODES_PATH,
    INFO_PATH,
    QUANTILES,
    STATE_KEY,
    STATS_PATH,
    TASKS_PATH,
    VIDEO_PATH,
)

if TYPE_CHECKING:
    from av.video.stream import VideoStream


def _image_stats(images: np.ndarray) -> dict[str, list]:
    """Per-channel image stats over all pixels, in [0, 1], shaped (3, 1, 1) as lerobot writes.

    count is the number of frames. Exact, from each channel's histogram of its 256 levels.
    """
    pixels = np.asarray(images, np.uint8).reshape(-1, 3)
    levels = np.arange(256, dtype=np.float64)
    out: dict[str, list] = {k: [] for k in ("min", "max", "mean", "std")}
    out.update({f"q{round(q * 100):02d}": [] for q in QUANTILES})
    for c in range(3):
        counts = np.bincount(pixels[:, c], minlength=256)
        n, seen = int(counts.sum()), np.flatnonzero(counts)
        mean = float(counts @ levels) / n
        out["min"].append(float(seen[0]))
        out["max"].append(float(seen[-1]))
        out["mean"].append(mean)
        out["std"].append(float(np.sqrt(counts @ (levels - mean) ** 2 / n)))
        ends = np.cumsum(counts)  # the k-th smallest value is the level whose run holds k
        for q in QUANTILES:  # np.quantile's default (linear) from the sorted order
            pos = q * (n - 1)
            lo, hi = (
                int(np.searchsorted(ends, k, side="right")) for k in (np.floor(pos), np.ceil(pos))
            )
            out[f"q{round(q * 100):02d}"].append(lo + (hi - lo) * (pos - np.floor(pos)))
    stats = {k: [[[x / 255.0]] for x in v] for k, v in out.items()}
    return {**stats, "count": [len(images)]}


def _episode_stats(camera: str, images: np.ndarray, columns: dict[str, np.ndarray]) -> dict:
    """One episode's `stats/<feature>/<stat>` columns of meta/episodes, as lerobot writes them.

    They are lerobot's compute_episode_stats as its writer flattens them (every feature: the
    camera per channel in [0, 1], shaped (3, 1, 1); vectors per dimension; scalars as one
    value). lerobot's tools pool these when they edit a dataset (aggregate_stats). Quantiles
    here are exact.
    """
    stats = {camera: _image_stats(images)}
    for key, values in columns.items():
        arr = np.asarray(values, dtype=np.float64)
        stats[key] = feature_stats(arr.reshape(len(arr), -1))
    return {f"stats/{key}/{name}": v for key, per in stats.items() for name, v in per.items()}


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
    episodes_per_file episodes (lerobot splits by megabytes; the layout is the same). A frame
    the yuv444p video would not give back exactly is a ValueError (yuvframes.stable()).
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
            stream = cast("VideoStream", out.add_stream(yuvframes.CODEC, rate=fps))
            stream.width, stream.height = width, height
            stream.pix_fmt = yuvframes.PIX_FMT
            stream.options = {k: str(v) for k, v in yuvframes.OPTIONS.items()}
            for ep in eps:
                length = len(frames_by_episode[ep])
                planes = yuvframes.to_yuv(frames_by_episode[ep])
                bad = yuvframes.unstable(frames_by_episode[ep], planes)
                if len(bad):
                    raise ValueError(
                        f"episode {ep}: frame {int(bad[0])} would not read back exactly from "
                        f"{yuvframes.PIX_FMT} (expected frames from yuvframes.stable())"
                    )
                for plane in planes:
                    frame = av.VideoFrame.from_ndarray(plane, format=yuvframes.PIX_FMT)
                    for packet in stream.encode(frame):
                        out.mux(packet)
                ts = (np.arange(length) / fps).astype(np.float32)
                task_index = task_names.index(tasks[ep])
                state = np.asarray(states[ep], np.float32)
                action = np.asarray(actions[ep], np.float32)
                columns: dict[str, np.ndarray] = {
                    "timestamp": ts,
                    "frame_index": np.arange(length, dtype=np.int64),
                    "episode_index": np.full(length, ep, np.int64),
                    "index": np.arange(offset, offset + length, dtype=np.int64),
                    "task_index": np.full(length, task_index, np.int64),
                }
                writer.write_table(
                    pa.table(
                        {  # one row group per episode, as lerobot writes
                            STATE_KEY: pa.FixedSizeListArray.from_arrays(
                                pa.array(state.ravel()), motors
                            ),
                            ACTION_KEY: pa.FixedSizeListArray.from_arrays(
                                pa.array(action.ravel()), motors
                            ),
                            **columns,
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
                        **_episode_stats(
                            camera,
                            frames_by_episode[ep],
                            {STATE_KEY: state, ACTION_KEY: action, **columns},
                        ),
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
        STATE_KEY: feature_stats(np.concatenate(states)),
        ACTION_KEY: feature_stats(np.concatenate(actions)),
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
    """The video.* entries lerobot records: the first video file's stream and encoder settings.

    They follow lerobot's get_video_info.
    """
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
            # the encoder's settings, as lerobot records them: its tools re-encode with these
            **{f"video.{k}": v for k, v in yuvframes.OPTIONS.items()},
            "video.fast_decode": 0,
            "video.video_backend": "pyav",
            "video.extra_options": {},
            "is_depth_map": False,
        }
