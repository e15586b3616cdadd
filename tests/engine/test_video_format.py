"""The engine's videos as lerobot's tools re-encode them: h264 yuv444p at crf 0, exact.

lerobot (0.6.1) cannot be installed beside this engine's torch, so what its editing tools do
to a video is reproduced here with PyAV, step by step as lerobot/datasets/dataset_tools.py,
video_utils.py, pyav_utils.py and configs/video.py do it: the encoder is built from
info.json's `video.*` entries (codec, pix_fmt, g, crf, preset), its pixel format is checked
against the codec's, and the kept frames are decoded, reformatted to that pixel format and
encoded again. Every frame must come back bit for bit.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

av = pytest.importorskip("av")
pytestmark = pytest.mark.engine

EPISODES, LENGTH, SIZE, FPS = 4, 12, 24, 10
CAMERA = "observation.images.top"


def _frames(seed: int) -> np.ndarray:
    """One episode of noisy gradients, brought to the yuv444p round trip's fixed point."""
    from fontaine_engine import yuvframes

    rng = np.random.default_rng(seed)
    ramp = np.linspace(0, 255, SIZE)[None, :, None] * rng.uniform(0.2, 1, size=(LENGTH, 1, 1, 3))
    raw = np.clip(ramp + rng.normal(0, 40, size=(LENGTH, SIZE, SIZE, 3)), 0, 255)
    return yuvframes.stable(raw.astype(np.uint8))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A small dataset by the engine's writer: (root, frames by episode)."""
    from fontaine_engine import lerobot_writer

    frames = [_frames(ep) for ep in range(EPISODES)]
    rng = np.random.default_rng(7)
    states = [rng.normal(size=(LENGTH, 6)).astype(np.float32) for _ in range(EPISODES)]
    actions = [rng.normal(size=(LENGTH, 6)).astype(np.float32) for _ in range(EPISODES)]
    root = tmp_path_factory.mktemp("video") / "ds"
    lerobot_writer.write(
        root,
        fps=FPS,
        camera=CAMERA,
        frames_by_episode=frames,
        states=states,
        actions=actions,
        tasks=["grasp"] * EPISODES,
        state_names=[f"m{i}" for i in range(6)],
        robot_type="test",
        episodes_per_file=3,
    )
    return root, frames, states, actions


# ------------------------------------------------- lerobot 0.6.1's re-encode, with PyAV


def _encoder_from_info(info: dict) -> tuple[str, str, dict[str, str]]:
    """configs/video.py: encoder_config_from_video_info, validate, get_codec_options."""
    vcodec, pix_fmt = info.get("video.codec", "libsvtav1"), info.get("video.pix_fmt", "yuv420p")
    g, crf, preset = info.get("video.g", 2), info.get("video.crf", 30), info.get("video.preset")
    codec = av.codec.Codec(vcodec, "w")  # pyav_utils.get_codec
    formats = [f.name for f in codec.video_formats or []]
    if formats and pix_fmt not in formats:  # pyav_utils._check_pixel_format
        raise ValueError(f"pix_fmt={pix_fmt!r} is not supported by codec {vcodec!r}")
    if isinstance(g, bool) or not isinstance(g, int) or g < 1:  # _check_codec_options
        raise ValueError(f"g={g!r} must be a positive integer")
    options = {"g": str(g), "crf": str(crf)}  # h264: g, crf, preset
    if preset is not None:
        options["preset"] = str(preset)
    return vcodec, pix_fmt, options


def _keep_episodes(src: Path, dst: Path, keep: list[tuple[int, int]], fps: int, info: dict):
    """dataset_tools._keep_episodes_from_video_with_av (delete_episodes, split_dataset)."""
    vcodec, pix_fmt, options = _encoder_from_info(info)
    with av.open(str(src)) as inp, av.open(str(dst), mode="w") as out:
        v_in = inp.streams.video[0]
        v_out = out.add_stream(vcodec, rate=Fraction(fps), options=options)
        v_out.width, v_out.height = v_in.codec_context.width, v_in.codec_context.height
        v_out.pix_fmt = pix_fmt
        v_out.time_base = Fraction(1, fps)
        out.start_encoding()
        index = count = 0
        for packet in inp.demux(v_in):
            for frame in packet.decode():
                if any(a <= index < b for a, b in keep):
                    new = frame.reformat(width=v_out.width, height=v_out.height, format=pix_fmt)
                    new.pts, new.time_base = count, Fraction(1, fps)
                    for pkt in v_out.encode(new):
                        out.mux(pkt)
                    count += 1
                index += 1
        for pkt in v_out.encode():
            out.mux(pkt)


def _encode_rgb(frames: np.ndarray, dst: Path, fps: int, info: dict) -> None:
    """video_utils.encode_video_frames: RGB images (PNG -> PIL RGB -> VideoFrame) encoded."""
    vcodec, pix_fmt, options = _encoder_from_info(info)
    with av.open(str(dst), "w") as out:
        stream = out.add_stream(vcodec, fps, options=options)
        stream.pix_fmt, stream.width, stream.height = pix_fmt, frames.shape[2], frames.shape[1]
        for img in frames:
            for pkt in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(pkt)
        for pkt in stream.encode():
            out.mux(pkt)


def _decoded(path: Path) -> np.ndarray:
    """Every frame as lerobot's PyAV decoder returns it (RGB24)."""
    with av.open(str(path)) as f:
        return np.stack([fr.to_ndarray(format="rgb24") for fr in f.decode(video=0)])


# ------------------------------------------------------------------------------- tests


def test_stable_frames_survive_the_round_trip_and_move_little():
    from fontaine_engine import yuvframes

    raw = np.random.default_rng(3).integers(0, 256, size=(20, 16, 16, 3), dtype=np.uint8)
    assert yuvframes.unstable(raw, yuvframes.to_yuv(raw)).size == 20  # noise is not stable
    fixed = yuvframes.stable(raw)
    assert yuvframes.unstable(fixed, yuvframes.to_yuv(fixed)).size == 0
    assert np.abs(fixed.astype(int) - raw).max() <= 3
    # one frame converted alone is converted as in the stacked batch
    alone = av.VideoFrame.from_ndarray(fixed[5], format="rgb24").reformat(format="yuv444p")
    assert np.array_equal(alone.to_ndarray(format="rgb24"), fixed[5])


def test_info_records_the_encoder_lerobot_reencodes_with(written):
    root, *_ = written
    info = json.loads((root / "meta/info.json").read_text())["features"][CAMERA]["info"]
    assert (info["video.codec"], info["video.pix_fmt"]) == ("h264", "yuv444p")
    assert (info["video.crf"], info["video.g"]) == (0, 2)
    assert _encoder_from_info(info)[1] == "yuv444p"  # lerobot's check passes


def test_frames_read_back_exactly(written):
    from fontaine_engine import lerobot, videos

    root, frames, *_ = written
    ds = lerobot.read(root)
    assert np.array_equal(videos.frames(ds, SIZE, CAMERA), np.concatenate(frames))
    for name in ("file-000.mp4", "file-001.mp4"):
        path = root / f"videos/{CAMERA}/chunk-000" / name
        first = 0 if name == "file-000.mp4" else 3
        want = np.concatenate(frames[first : first + 3])
        assert np.array_equal(_decoded(path), want)


def test_lerobot_delete_and_split_reencode_stays_exact(written, tmp_path):
    root, frames, *_ = written
    info = json.loads((root / "meta/info.json").read_text())["features"][CAMERA]["info"]
    src = root / f"videos/{CAMERA}/chunk-000/file-000.mp4"
    dst = tmp_path / "kept.mp4"
    # delete episode 1 of the file's three (frames [12, 24))
    _keep_episodes(src, dst, [(0, LENGTH), (2 * LENGTH, 3 * LENGTH)], FPS, info)
    assert np.array_equal(_decoded(dst), np.concatenate([frames[0], frames[2]]))
    # and again from the re-encoded file: a second edit loses nothing either
    again = tmp_path / "again.mp4"
    _keep_episodes(dst, again, [(LENGTH, 2 * LENGTH)], FPS, info)
    assert np.array_equal(_decoded(again), frames[2])


def test_lerobot_encode_from_rgb_images_stays_exact(written, tmp_path):
    root, frames, *_ = written
    info = json.loads((root / "meta/info.json").read_text())["features"][CAMERA]["info"]
    _encode_rgb(frames[3], tmp_path / "ep.mp4", FPS, info)
    assert np.array_equal(_decoded(tmp_path / "ep.mp4"), frames[3])


def test_the_writer_refuses_a_frame_the_video_would_change(tmp_path):
    from fontaine_engine import lerobot_writer

    noise = np.random.default_rng(5).integers(0, 256, size=(LENGTH, SIZE, SIZE, 3), dtype=np.uint8)
    zeros = np.zeros((LENGTH, 6), np.float32)
    with pytest.raises(ValueError, match=r"episode 0: frame 0 would not read back exactly"):
        lerobot_writer.write(
            tmp_path / "ds",
            fps=FPS,
            camera=CAMERA,
            frames_by_episode=[noise],
            states=[zeros],
            actions=[zeros],
            tasks=["grasp"],
            state_names=[f"m{i}" for i in range(6)],
            robot_type="test",
        )
