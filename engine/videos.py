"""The camera frames of a LeRobotDataset, decoded with PyAV into the frame cache.

The frames a run trains on are decoded once per camera, resized to the model's image size,
into a cache outside the dataset folder (`$XDG_CACHE_HOME/fontaine-engine/frames/`), keyed by
the camera and its files' names, sizes and modification times (the videos, or for an image
feature the frame tables holding its PNGs: engine/images.py); a dataset folder is only ever
read. A frame's timestamp must match a decoded video frame to TOLERANCE_S, as lerobot requires.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np

from . import images, yuvframes
from .lerobot import Dataset, DatasetError, Episode

TOLERANCE_S = 1e-4  # lerobot's default: a frame's timestamp must match a video frame this well


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fontaine-engine" / "frames"


def _frames_key(ds: Dataset, size: int, camera: str) -> str:
    if ds.is_video(camera):
        files = sorted({ep.video[camera][0] for ep in ds.episodes})
    else:
        files = [str(p.relative_to(ds.root)) for p in ds.data_files]
    parts = [str(ds.root.resolve()), camera, str(size), str(len(ds.timestamp))]
    for name in files:
        try:
            st = (ds.root / name).stat()
        except OSError as exc:
            raise DatasetError(f"{ds.root / name}: cannot read ({exc.strerror or exc})") from None
        parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def frames(ds: Dataset, size: int, camera: str, cache: Path | None = None) -> np.ndarray:
    """The frames of one of the dataset's cameras, (N, size, size, 3) uint8.

    They are row-aligned with the frame table, decoded once into the frame cache, then
    memory-mapped.
    """
    cache = cache or cache_dir()
    path = cache / f"{ds.name}-{_frames_key(ds, size, camera)}.npy"
    if path.is_file():
        try:
            arr = np.load(path, mmap_mode="r")
            if arr.shape == (len(ds.timestamp), size, size, 3):
                return arr
        except (OSError, ValueError):
            pass
    cache.mkdir(parents=True, exist_ok=True)
    if ds.is_video(camera):
        out = _video_frames(ds, size, camera)
    else:
        out = images.frames(ds, size, camera)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=cache)
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, out)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return np.load(path, mmap_mode="r")


def _video_frames(ds: Dataset, size: int, camera: str) -> np.ndarray:
    """The frames of a video camera at the frame table's timestamps."""
    out = np.empty((len(ds.timestamp), size, size, 3), dtype=np.uint8)
    by_file: dict[str, list[Episode]] = {}
    for ep in ds.episodes:
        by_file.setdefault(ep.video[camera][0], []).append(ep)
    for name, eps in by_file.items():
        times, decoded = _decode(ds.root / name, size)
        for ep in eps:
            rows = slice(ep.start, ep.start + ep.length)
            query = ds.timestamp[rows] + ep.video[camera][1]
            at = np.clip(np.searchsorted(times, query - TOLERANCE_S), 0, max(len(times) - 1, 0))
            if not len(times) or np.abs(times[at] - query).max() > TOLERANCE_S:
                worst = float(query[np.argmax(np.abs(times[at] - query))]) if len(times) else 0.0
                raise DatasetError(
                    f"{ds.root / name}: no frame at {worst:.4f} s for episode "
                    f"{ep.index} (expected the episode's timestamps within "
                    f"{TOLERANCE_S} s of a video frame)"
                )
            out[rows] = decoded[at]
    return out


def _decode(path: Path, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Every frame of one video file (presentation time in seconds, RGB frames at size)."""
    import av

    try:
        container = av.open(str(path))
    except (OSError, av.error.FFmpegError) as exc:
        raise DatasetError(f"{path}: not a readable video ({exc})") from None
    times: list[float] = []
    images: list[np.ndarray] = []  # RGB frames, or planes converted after the loop
    planar: list[int] = []
    with container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        for frame in container.decode(stream):
            if frame.width != size or frame.height != size:
                frame = frame.reformat(width=size, height=size, interpolation="AREA")
            if _default_yuv444(frame):
                planar.append(len(images))
                images.append(_planes(frame))  # converted below
            else:
                images.append(_rgb(frame))
            times.append(float(frame.time))
    if planar:  # one conversion for all: the same as each frame's own, ~10x faster
        rgb = yuvframes.to_rgb(np.stack([images[i] for i in planar]))
        for i, img in zip(planar, rgb, strict=True):
            images[i] = img
    order = np.argsort(times, kind="stable")
    return np.asarray(times)[order], np.stack(images)[order] if images else np.zeros(
        (0, size, size, 3), np.uint8
    )


def _default_yuv444(frame) -> bool:
    """Tell whether a frame is yuv444p with no colour space or range of its own, as ours are.

    A frame without its own is BT.601, limited range: FFmpeg's default. The engine writes such
    frames.
    """
    return (
        frame.format.name == yuvframes.PIX_FMT
        and frame.colorspace in (2, 5, 6)  # unspecified, BT.470BG, SMPTE 170M: BT.601
        and frame.color_range in (0, 1)  # unspecified, limited ("tv")
    )


def _rgb(frame) -> np.ndarray:
    """(H, W, 3) RGB of a decoded frame.

    Planar GBR (libx264rgb) is read plane by plane: exact, and ~8x faster than a colour
    conversion for small frames.
    """
    if frame.format.name == "gbrp":
        g, b, r = _planes(frame)
        return np.stack([r, g, b], axis=-1)
    return frame.to_ndarray(format="rgb24")


def _planes(frame) -> np.ndarray:
    """(3, H, W) uint8: the three full-size planes of a planar 8-bit frame, as stored."""
    h, w = frame.height, frame.width
    return np.stack(
        [np.frombuffer(p, np.uint8).reshape(h, p.line_size)[:, :w] for p in frame.planes]
    )
