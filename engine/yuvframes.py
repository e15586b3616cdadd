"""RGB frames that the engine's video format carries exactly: h264 yuv444p at crf 0.

libx264 at crf 0 is lossless on the YUV planes it is given, and yuv444p keeps every chroma
sample; what is not exact is the colour conversion. FFmpeg's RGB -> YUV -> RGB (BT.601,
limited range: what PyAV and lerobot use by default) moves most colours by 1 to 3 levels. A
frame that this round trip leaves unchanged (a fixed point) is carried exactly: encoded,
decoded and converted back to RGB, it is the same bytes. stable() brings frames there
(every colour settles within 3 round trips, at most 3 levels from where it started).

lerobot's editing tools (split_dataset, delete_episodes) re-encode with the codec, pixel
format, crf and GOP of info.json; decoded yuv444p reformatted to yuv444p is not converted,
so their re-encodes stay exact as well. The conversions here run on tall images (frames
stacked), since FFmpeg converts pixel by pixel and one call per frame costs ~1 ms.
"""

from __future__ import annotations

import numpy as np

CODEC = "libx264"  # info.json records the stream's codec name, "h264"
PIX_FMT = "yuv444p"
OPTIONS = {"crf": 0, "g": 2, "preset": "ultrafast"}  # crf 0: lossless (qp 0) for 8-bit x264
ROUNDS = 8  # stable() gives up past this many round trips (3 suffice for every colour)
_BATCH = 512  # frames per conversion call


def to_yuv(frames: np.ndarray) -> np.ndarray:
    """(N, H, W, 3) uint8 RGB -> (N, 3, H, W) uint8 yuv444p planes (FFmpeg's conversion)."""
    import av

    frames = np.asarray(frames, dtype=np.uint8)
    n, h, w, _ = frames.shape
    out = np.empty((n, 3, h, w), np.uint8)
    for i in range(0, n, _BATCH):
        part = frames[i : i + _BATCH]
        tall = np.ascontiguousarray(part.reshape(-1, w, 3))
        yuv = av.VideoFrame.from_ndarray(tall, format="rgb24").reformat(format=PIX_FMT)
        out[i : i + len(part)] = yuv.to_ndarray().reshape(3, len(part), h, w).transpose(1, 0, 2, 3)
    return out


def to_rgb(planes: np.ndarray) -> np.ndarray:
    """(N, 3, H, W) uint8 yuv444p planes -> (N, H, W, 3) uint8 RGB (FFmpeg's conversion)."""
    import av

    planes = np.asarray(planes, dtype=np.uint8)
    n, _, h, w = planes.shape
    out = np.empty((n, h, w, 3), np.uint8)
    for i in range(0, n, _BATCH):
        part = planes[i : i + _BATCH]
        tall = np.ascontiguousarray(part.transpose(1, 0, 2, 3).reshape(3, -1, w))
        frame = av.VideoFrame.from_ndarray(tall, format=PIX_FMT)
        out[i : i + len(part)] = frame.to_ndarray(format="rgb24").reshape(len(part), h, w, 3)
    return out


def stable(frames: np.ndarray) -> np.ndarray:
    """The frames moved to a fixed point of the RGB -> yuv444p -> RGB round trip (a copy).

    Each frame is sent round until it comes back unchanged; a value moves by at most 3."""
    out = np.array(frames, dtype=np.uint8, copy=True)
    todo = np.arange(len(out))
    for _ in range(ROUNDS):
        if not len(todo):
            return out
        back = to_rgb(to_yuv(out[todo]))
        moved = (back != out[todo]).reshape(len(todo), -1).any(axis=1)
        out[todo] = back
        todo = todo[moved]
    if len(todo):
        raise ValueError(f"{len(todo)} frames still change after {ROUNDS} yuv444p round trips")
    return out


def unstable(frames: np.ndarray, planes: np.ndarray) -> np.ndarray:
    """Indices of the frames that their planes do not give back exactly."""
    back = to_rgb(planes)
    return np.flatnonzero((back != np.asarray(frames)).reshape(len(back), -1).any(axis=1))
