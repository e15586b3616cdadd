"""The frames of an image feature: PNGs held in a LeRobotDataset's frame tables.

lerobot stores a feature of dtype "image" inside the data parquet files, one
`{"bytes": PNG, "path": name}` struct per frame (the `datasets` library's Image storage, the
bytes embedded when the episode is saved). They are decoded here with PyAV's PNG decoder and
resized with area averaging, as video frames are (engine/videos.py keeps them in the frame
cache).
"""

from __future__ import annotations

import numpy as np

from .lerobot import Dataset, DatasetError, _parquet


def frames(ds: Dataset, size: int, camera: str) -> np.ndarray:
    """(N, size, size, 3) uint8: the camera's PNGs, row-aligned with the frame table."""
    import pyarrow as pa

    decoded: list[np.ndarray] = []
    for path in ds.data_files:
        col = _parquet(path, [camera]).column(camera).combine_chunks()
        if not pa.types.is_struct(col.type) or col.type.get_field_index("bytes") < 0:
            raise DatasetError(
                f"{path}: column {camera}: expected image structs {{bytes, path}} "
                f"(lerobot's image feature), got {col.type}"
            )
        for row, data in enumerate(col.field("bytes").to_pylist()):
            if not data:
                raise DatasetError(
                    f"{path}: column {camera}, row {row}: no embedded image bytes (expected "
                    "the PNG in the parquet file, as lerobot saves an episode)"
                )
            decoded.append(_decode(data, size, path, camera, row))
    if len(decoded) != len(ds.row_order):
        raise DatasetError(
            f"{ds.root}: {camera}: {len(decoded)} images for {len(ds.row_order)} frames"
        )
    out = np.stack(decoded) if decoded else np.zeros((0, size, size, 3), np.uint8)
    return out[ds.row_order]


def _decode(data: bytes, size: int, path, camera: str, row: int) -> np.ndarray:
    """One PNG, decoded on its own and resized to size x size.

    A decoder kept across images may hand back an earlier frame, so each image gets its own.
    """
    import av

    try:
        got = av.CodecContext.create("png", "r").decode(av.Packet(data))
    except av.error.FFmpegError as exc:
        got, why = [], str(exc)
    else:
        why = "no frame"
    if len(got) != 1:
        raise DatasetError(f"{path}: column {camera}, row {row}: not a readable PNG ({why})")
    frame = got[0]
    if frame.width != size or frame.height != size:
        frame = frame.reformat(width=size, height=size, interpolation="AREA")
    return frame.to_ndarray(format="rgb24")
