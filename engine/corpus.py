"""Procedural grasp-demonstration corpus: generated once, cached, checksummed.

Scenes are 32x32 top-down RGB frames: a 6-motor arm (base yaw, shoulder, elbow,
wrist flex, wrist roll, gripper; degrees / gripper percent like an SO-101) reaching
an object with a minimum-jerk trajectory, then closing the gripper. 32 px keeps the
image prefix at 16 patch tokens (patch 8), which is what lets the small recipe run
1000 steps of batch 96 on two CPU cores; objects are drawn anti-aliased so their
position is readable below one pixel.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.stats import NormStats

VERSION = 1
IMAGE_SIZE = 32
CHUNK = 8
MOTORS = 6
EPISODE_LEN = 32
EVAL_FRAMES = 256
TRAIN_SLICE = 256
DATASETS = ("demos", "rig")
EPISODES = {"demos": 480, "rig": 240}
EVAL_FRACTION = 0.1
FILES = ("images", "states", "actions", "dataset", "episode", "split")

# Arm geometry in image units (0..1, base at bottom centre).
LINK1, LINK2 = 0.5, 0.45
HOME = np.array([0.0, 40.0, 50.0, 0.0, 0.0, 80.0], dtype=np.float32)


class CorpusError(RuntimeError):
    """The cache folder cannot be used or written."""


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fontaine-engine" / f"corpus-v{VERSION}"


@dataclass(frozen=True, slots=True)
class Corpus:
    """Memory-mapped arrays of one corpus; index arrays select frames."""

    root: Path
    images: np.ndarray  # (N, H, W, 3) uint8
    states: np.ndarray  # (N, 6) float32, raw units
    actions: np.ndarray  # (N, CHUNK, 6) float32, raw units (next CHUNK joint targets)
    dataset: np.ndarray  # (N,) int8 index into DATASETS
    episode: np.ndarray  # (N,) int32
    split: np.ndarray  # (N,) int8: 0 train, 1 eval

    @property
    def train_index(self) -> np.ndarray:
        return np.flatnonzero(self.split == 0)

    def eval_draw(self, seed: int) -> np.ndarray:
        """The fixed 256-frame eval draw for a seed."""
        pool = np.flatnonzero(self.split == 1)
        rng = np.random.default_rng([seed, 0xE7A1])
        return np.sort(rng.choice(pool, size=min(EVAL_FRAMES, len(pool)), replace=False))

    def train_slice(self, seed: int) -> np.ndarray:
        """A fixed slice of training frames, probed like the eval draw."""
        pool = self.train_index
        rng = np.random.default_rng([seed, 0x7A11])
        return np.sort(rng.choice(pool, size=min(TRAIN_SLICE, len(pool)), replace=False))


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
    "demos": ((0.78, 0.76, 0.70), ((0.85, 0.15, 0.10), (0.95, 0.55, 0.05)), (0.15, 0.15, 0.2), False, 0.0),
    "rig": ((0.25, 0.30, 0.38), ((0.10, 0.75, 0.30), (0.20, 0.45, 0.95)), (0.95, 0.9, 0.3), True, 2.0),
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
    u = np.clip(((px[None] - ax) * vx[:, None, None] + (py[None] - ay) * vy[:, None, None]) / ll[:, None, None], 0, 1)
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


def generate(seed: int = 0) -> dict[str, np.ndarray]:
    """Build every array of the corpus in memory (deterministic for a seed)."""
    parts: dict[str, list[np.ndarray]] = {k: [] for k in FILES}
    episode_id = 0
    for ds_index, name in enumerate(DATASETS):
        rng = np.random.default_rng([seed, VERSION, ds_index])
        n_eps = EPISODES[name]
        eval_eps = set(rng.choice(n_eps, size=max(1, int(n_eps * EVAL_FRACTION)), replace=False).tolist())
        for ep in range(n_eps):
            obj_xy = np.array([rng.uniform(0.18, 0.82), rng.uniform(0.15, 0.62)])
            obj_size = rng.uniform(0.12, 0.2) if name == "demos" else rng.uniform(0.1, 0.16)
            poses = _episode_poses(rng, obj_xy, obj_size)
            parts["images"].append(_render(name, rng, poses, obj_xy, obj_size))
            states = poses + rng.normal(0, 0.3, size=poses.shape).astype(np.float32)
            parts["states"].append(states.astype(np.float32))
            idx = np.minimum(np.arange(EPISODE_LEN)[:, None] + 1 + np.arange(CHUNK)[None, :], EPISODE_LEN - 1)
            parts["actions"].append(poses[idx])
            parts["dataset"].append(np.full(EPISODE_LEN, ds_index, dtype=np.int8))
            parts["episode"].append(np.full(EPISODE_LEN, episode_id, dtype=np.int32))
            parts["split"].append(np.full(EPISODE_LEN, 1 if ep in eval_eps else 0, dtype=np.int8))
            episode_id += 1
    return {k: np.concatenate(v) for k, v in parts.items()}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _manifest_ok(root: Path, seed: int) -> bool:
    try:
        manifest = json.loads((root / "manifest.json").read_text())
        if manifest.get("version") != VERSION or manifest.get("seed") != seed:
            return False
        for name in FILES:
            entry = manifest["files"][name]
            path = root / f"{name}.npy"
            if path.stat().st_size != entry["bytes"] or _sha256(path) != entry["sha256"]:
                return False
        NormStats.load(root / "stats.json")
        return True
    except (OSError, ValueError, KeyError, TypeError):
        return False


MARKER = ".fontaine-engine-corpus"  # written by build() into every folder it creates
OURS = frozenset({*(f"{name}.npy" for name in FILES), "stats.json", "manifest.json", MARKER})


def is_ours(root: Path) -> bool:
    """Did build() create this folder? (Only such a folder may ever be rebuilt.)"""
    return (root / MARKER).is_file()


def check_dir(root: Path, seed: int = 0) -> str:
    """What ensure() would do with root: "use", "build" or "rebuild".

    Raises CorpusError, touching nothing, for a path that is not a folder, a folder that holds
    anything without the engine's marker (unless it holds a valid corpus, which is used as a
    dataset), or a marked folder that also holds files the engine did not write.
    """
    if not root.exists():
        return "build"
    if not root.is_dir():
        raise CorpusError(f"{root}: exists and is not a folder (expected a corpus folder)")
    if _manifest_ok(root, seed):
        return "use"
    entries = sorted(p.name for p in root.iterdir())
    if not entries:
        return "build"  # an empty folder: the corpus is written into it
    if not is_ours(root):
        raise CorpusError(
            f"{root}: not a corpus the engine made (no {MARKER} marker) and not a dataset it "
            f"can read (expected manifest.json, stats.json and {', '.join(FILES)} as .npy); "
            "nothing in it was touched")
    foreign = [name for name in entries if name not in OURS]
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise CorpusError(f"{root}: the corpus cache needs rebuilding but also holds files the "
                          f"engine did not write ({shown}); move them out, nothing was touched")
    return "rebuild"


def _discard(folder: Path) -> None:
    """Remove a corpus folder of ours: only the file names build() writes, then the folder.
    Anything else found in it stays (and so does the folder)."""
    for name in OURS:
        (folder / name).unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:
        pass


def build(root: Path, seed: int = 0) -> None:
    """Generate into a temp folder next to root, then rename it into place.

    Only ever replaces an empty folder or one that check_dir() calls ours to rebuild.
    """
    action = check_dir(root, seed)
    if action == "use":
        return
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}.tmp-", dir=root.parent))
    placed = False
    try:
        (tmp / MARKER).write_text("created by the fontaine engine's corpus builder; "
                                  "the engine may delete and rebuild this folder\n")
        arrays = generate(seed)
        files = {}
        for name in FILES:
            path = tmp / f"{name}.npy"
            np.save(path, arrays[name])
            files[name] = {"bytes": path.stat().st_size, "sha256": _sha256(path),
                           "shape": list(arrays[name].shape)}
        manifest = {"version": VERSION, "seed": seed, "image_size": IMAGE_SIZE, "chunk": CHUNK,
                    "datasets": list(DATASETS), "created": time.time(), "files": files}
        train = arrays["split"] == 0
        NormStats.compute(arrays["states"][train], arrays["actions"][train]).save(tmp / "stats.json")
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
        if action == "rebuild":
            if check_dir(root, seed) == "use":  # another process rebuilt it meanwhile
                return
            old = Path(tempfile.mkdtemp(prefix=f".{root.name}.old-", dir=root.parent))
            os.replace(root, old / "corpus")
            _discard(old / "corpus")
            try:
                old.rmdir()
            except OSError:
                pass
        # rename(2) onto a folder succeeds only if it is empty: a file that appeared in the
        # meantime makes this fail instead of being replaced
        os.replace(tmp, root)
        placed = True
    except OSError:
        if _manifest_ok(root, seed):  # another process won the race
            return
        raise
    finally:
        if not placed:
            _discard(tmp)


def ensure(root: Path, seed: int = 0) -> bool:
    """Make root hold a valid corpus; returns True when it had to be (re)built.
    Raises CorpusError when root is not ours to write (see check_dir)."""
    root = root.resolve()  # a symlinked folder: act on the folder, never on the link
    if _manifest_ok(root, seed):
        return False
    try:
        build(root, seed)
    except OSError as exc:
        raise CorpusError(f"cannot write corpus cache {root}: {exc}") from exc
    return True


def load(root: Path) -> Corpus:
    arrays = {name: np.load(root / f"{name}.npy", mmap_mode="r") for name in FILES}
    return Corpus(root=root, **arrays)
