"""The engine's generated corpus: procedural grasp demonstrations written as LeRobotDatasets.

Scenes are 32x32 top-down RGB frames at 10 fps: a 6-motor arm (base yaw, shoulder, elbow,
wrist flex, wrist roll, gripper; degrees / gripper percent like an SO-101) reaching an
object with a minimum-jerk trajectory, then closing the gripper. 32 px keeps the image
prefix at 16 patch tokens (patch 8), which is what lets the small recipe run 1000 steps of
batch 96 on two CPU cores; objects are drawn anti-aliased so their position is readable
below one pixel.

write_datasets() writes one LeRobotDataset per sub-dataset (`demos/`, `rig/`) with
engine/lerobot_writer.py. Where the corpus is kept,
and when it may be built or rebuilt, is engine/corpus.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import lerobot_writer, status, yuvframes

VERSION = 3  # the corpus's format: its cache folder (corpus-v3) and manifest; 3: yuv444p videos
SCENES = 2  # the scenes' random draw, unchanged since version 2
IMAGE_SIZE = 32
FPS = 10
MOTORS = 6
EPISODE_LEN = 32
DATASETS = ("demos", "rig")
EPISODES = {"demos": 480, "rig": 240}
EVAL_FRACTION = 0.1
CAMERA = "observation.images.top"
STATE_NAMES = (
    "shoulder_pan.pos",
    "shoulder_lift.pos",
    "elbow_flex.pos",
    "wrist_flex.pos",
    "wrist_roll.pos",
    "gripper.pos",
)
TASKS = {
    "demos": "Grasp the red or orange object and lift it.",
    "rig": "Grasp the green or blue block and lift it.",
}

# Arm geometry in image units (0..1, base at bottom centre).
LINK1, LINK2 = 0.5, 0.45
HOME = np.array([0.0, 40.0, 50.0, 0.0, 0.0, 80.0], dtype=np.float32)

# --------------------------------------------------------------------------- kinematics


def _ik(target_xy: np.ndarray) -> np.ndarray:
    """Joint pose (first 4 motors) placing the gripper over (x, y); base at (0.5, 1.0)."""
    dx, dy = target_xy[0] - 0.5, 1.0 - target_xy[1]
    yaw = np.degrees(np.arctan2(dx, dy))
    d = np.clip(np.hypot(dx, dy), 0.2, 0.92)
    elbow = np.clip(20.0 + 70.0 * (d - 0.3) / 0.6, 20.0, 90.0)
    # reach d = L1 sin(s) + L2 sin(s + e - 90) = R sin(s - phi)
    e = np.radians(elbow)
    a, b = LINK1 + LINK2 * np.sin(e), LINK2 * np.cos(e)
    shoulder = np.degrees(np.arctan2(b, a) + np.arcsin(d / np.hypot(a, b)))
    wrist = 90.0 - (shoulder + elbow)
    return np.array([yaw, shoulder, elbow, wrist], dtype=np.float64)


def _fk(pose: np.ndarray) -> np.ndarray:
    """Gripper (x, y) in image units for poses (..., 6)."""
    yaw, s, e = np.radians(pose[..., 0]), np.radians(pose[..., 1]), np.radians(pose[..., 2])
    d = LINK1 * np.sin(s) + LINK2 * np.sin(s + e - np.pi / 2)
    return np.stack([0.5 + d * np.sin(yaw), 1.0 - d * np.cos(yaw)], axis=-1)


def _min_jerk(tau: np.ndarray) -> np.ndarray:
    tau = np.clip(tau, 0.0, 1.0)
    return 10 * tau**3 - 15 * tau**4 + 6 * tau**5


def _episode_poses(rng: np.random.Generator, obj_xy: np.ndarray, obj_size: float) -> np.ndarray:
    """(EPISODE_LEN, 6) joint poses: reach with minimum jerk, then close and lift."""
    start = HOME + rng.normal(0, [12, 6, 8, 6, 10, 4]).astype(np.float32)
    goal = np.empty(6)
    goal[:4] = _ik(obj_xy)
    goal[4] = rng.uniform(-45, 45)
    goal[5] = start[5]
    t = np.arange(EPISODE_LEN, dtype=np.float64)
    reach_end = rng.integers(16, 23)
    s = _min_jerk(t / reach_end)[:, None]
    poses = start[None, :] * (1 - s) + goal[None, :] * s
    closed = np.clip(70.0 * obj_size / 0.16 - 40.0, 5.0, 40.0)
    g = _min_jerk((t - reach_end) / 6.0)
    poses[:, 5] = start[5] * (1 - g) + closed * g
    lift = _min_jerk((t - reach_end - 6) / 5.0)
    poses[:, 1] -= 12.0 * lift
    return poses.astype(np.float32)


# --------------------------------------------------------------------------- rendering

_STYLE = {
    # background, object colours, gripper colour, square objects?, camera jitter (px)
    "demos": (
        (0.78, 0.76, 0.70),
        ((0.85, 0.15, 0.10), (0.95, 0.55, 0.05)),
        (0.15, 0.15, 0.2),
        False,
        0.0,
    ),
    "rig": (
        (0.25, 0.30, 0.38),
        ((0.10, 0.75, 0.30), (0.20, 0.45, 0.95)),
        (0.95, 0.9, 0.3),
        True,
        2.0,
    ),
}


def _render(name: str, rng: np.random.Generator, poses: np.ndarray, obj_xy, obj_size) -> np.ndarray:
    bg, obj_colours, grip_colour, square, jitter = _STYLE[name]
    n, h = len(poses), IMAGE_SIZE
    shift = rng.uniform(-jitter, jitter, size=2) / h if jitter else np.zeros(2)
    yy, xx = np.mgrid[0:h, 0:h].astype(np.float32)
    px = (xx + 0.5) / h - shift[0]
    py = (yy + 0.5) / h - shift[1]
    static = np.empty((h, h, 3), dtype=np.float32)
    static[:] = np.asarray(bg, dtype=np.float32) * rng.uniform(0.9, 1.1)
    static += (0.06 * (py - 0.5))[:, :, None]  # table shading, so the frame is not flat

    def paint(img: np.ndarray, mask: np.ndarray, colour) -> None:
        m = np.clip(mask, 0.0, 1.0)[..., None]
        img += m * (np.asarray(colour, dtype=np.float32) - img)

    colour = obj_colours[rng.integers(len(obj_colours))]
    half = obj_size / 2
    if square:
        dist = np.maximum(np.abs(px - obj_xy[0]), np.abs(py - obj_xy[1])) - half
    else:
        dist = np.hypot(px - obj_xy[0], py - obj_xy[1]) - half
    paint(static, 0.5 - dist * h, colour)
    paint(static, 0.5 - (np.hypot(px - 0.5, py - 1.0) - 0.09) * h, (0.3, 0.3, 0.3))
    img = np.repeat(static[None], n, axis=0)
    tip = _fk(poses)  # (n, 2)
    # Arm: distance from each pixel to the base->gripper segment.
    ax, ay = 0.5, 1.0
    vx, vy = tip[:, 0] - ax, tip[:, 1] - ay
    ll = np.maximum(vx**2 + vy**2, 1e-6)
    u = np.clip(
        ((px[None] - ax) * vx[:, None, None] + (py[None] - ay) * vy[:, None, None])
        / ll[:, None, None],
        0,
        1,
    )
    seg = np.hypot(px[None] - ax - u * vx[:, None, None], py[None] - ay - u * vy[:, None, None])
    paint(img, 0.5 - (seg - 0.025) * h, np.asarray(grip_colour) * 0.7 + 0.15)
    # Gripper jaws: two dots across the arm direction, spread by the gripper opening.
    roll = np.radians(poses[:, 4])
    open_ = 0.03 + 0.07 * poses[:, 5] / 100.0
    for sign in (-1.0, 1.0):
        jx = tip[:, 0] + sign * open_ * np.cos(roll)
        jy = tip[:, 1] + sign * open_ * np.sin(roll)
        d = np.hypot(px[None] - jx[:, None, None], py[None] - jy[:, None, None]) - 0.035
        paint(img, 0.5 - d * h, grip_colour)
    img += 0.02 * rng.standard_normal(size=img.shape, dtype=np.float32)
    return (np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8)


# --------------------------------------------------------------------------- generation


@dataclass(frozen=True, slots=True)
class Generated:
    """One sub-dataset in memory, episode by episode (the last EVAL_FRACTION are the eval split)."""

    frames: list[np.ndarray]  # (T, H, W, 3) uint8
    states: list[np.ndarray]  # (T, 6) float32
    actions: list[np.ndarray]  # (T, 6) float32: the next joint target of each frame
    eval_from: int


def generate(seed: int = 0, say: status.Say | None = None) -> dict[str, Generated]:
    """Render every episode of every sub-dataset (deterministic for a seed).

    `say` hears how many episodes are rendered (engine/status.py)."""
    out = {}
    count = status.counter(say, "building the corpus", sum(EPISODES.values()), "episodes")
    rendered = 0
    count(rendered)
    for ds_index, name in enumerate(DATASETS):
        rng = np.random.default_rng([seed, SCENES, ds_index])
        n_eps = EPISODES[name]
        frames, states, actions = [], [], []
        for _ in range(n_eps):
            obj_xy = np.array([rng.uniform(0.18, 0.82), rng.uniform(0.15, 0.62)])
            obj_size = rng.uniform(0.12, 0.2) if name == "demos" else rng.uniform(0.1, 0.16)
            poses = _episode_poses(rng, obj_xy, obj_size)
            # at the yuv444p round trip's fixed point, so the video gives them back exactly
            frames.append(yuvframes.stable(_render(name, rng, poses, obj_xy, obj_size)))
            states.append((poses + rng.normal(0, 0.3, size=poses.shape)).astype(np.float32))
            actions.append(poses[np.minimum(np.arange(EPISODE_LEN) + 1, EPISODE_LEN - 1)])
            rendered += 1
            count(rendered)
        # episodes are drawn independently, so the last tenth is as good an eval split as any
        out[name] = Generated(frames, states, actions, n_eps - max(1, int(n_eps * EVAL_FRACTION)))
    return out


def write_datasets(folder: Path, seed: int = 0, say: status.Say | None = None) -> None:
    """Render the corpus and write each sub-dataset into folder as a LeRobotDataset v3.0 folder.

    The folder is new or empty. `say` hears each stage (engine/status.py).
    """
    for name, gen in generate(seed, say).items():
        if say is not None:
            say(f"building the corpus: writing {name} ({len(gen.frames)} episodes)")
        lerobot_writer.write(
            folder / name,
            fps=FPS,
            camera=CAMERA,
            frames_by_episode=gen.frames,
            states=gen.states,
            actions=gen.actions,
            tasks=[TASKS[name]] * len(gen.frames),
            state_names=STATE_NAMES,
            robot_type="so101_follower",
            eval_from=gen.eval_from,
        )
