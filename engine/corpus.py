"""Procedural grasp-demonstration corpus, written as LeRobotDataset v3.0 folders; and the
reader that turns such folders (ours or a user's) into the arrays the engine trains on.

Scenes are 32x32 top-down RGB frames at 10 fps: a 6-motor arm (base yaw, shoulder, elbow,
wrist flex, wrist roll, gripper; degrees / gripper percent like an SO-101) reaching an
object with a minimum-jerk trajectory, then closing the gripper. 32 px keeps the image
prefix at 16 patch tokens (patch 8), which is what lets the small recipe run 1000 steps of
batch 96 on two CPU cores; objects are drawn anti-aliased so their position is readable
below one pixel.

The corpus folder holds one LeRobotDataset per sub-dataset (`demos/`, `rig/`), the engine's
marker file and manifest.json (every file's sha256). `--data-dir` may also name a user's
LeRobotDataset folder, or a folder of several: those are only ever read (engine/lerobot.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import lerobot
from .stats import NormStats

VERSION = 2
IMAGE_SIZE = 32
FPS = 10
CHUNK_SECONDS = 0.8  # the action chunk's horizon: 8 frames at 10 fps
MOTORS = 6
EPISODE_LEN = 32
EVAL_FRAMES = 256
TRAIN_SLICE = 256
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
EVAL_SEED, SLICE_SEED = 0xE7A1, 0x7A11  # the probe frames are fixed per corpus, not per run

# Arm geometry in image units (0..1, base at bottom centre).
LINK1, LINK2 = 0.5, 0.45
HOME = np.array([0.0, 40.0, 50.0, 0.0, 0.0, 80.0], dtype=np.float32)


class CorpusError(RuntimeError):
    """The cache folder cannot be used or written, or a dataset cannot be read."""


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fontaine-engine" / f"corpus-v{VERSION}"


def chunk_for(fps: int) -> int:
    """Actions per chunk for a dataset's frame rate (CHUNK_SECONDS of future targets)."""
    return max(1, round(CHUNK_SECONDS * fps))


CHUNK = chunk_for(FPS)


@dataclass(frozen=True, slots=True)
class Corpus:
    """The frames of one or more sub-datasets as arrays; index arrays select frames.

    `names` are every sub-dataset found (the eval draw and its per-dataset breakdown cover all
    of them); `train_names` those chosen to train on (`--datasets`)."""

    root: Path
    names: tuple[str, ...]
    train_names: tuple[str, ...]
    fps: int
    images: np.ndarray  # (N, H, W, 3) uint8
    states: np.ndarray  # (N, S) float32, raw units
    actions: np.ndarray  # (N, chunk, A) float32, raw units: the next chunk of targets
    frame_actions: np.ndarray  # (N, A) float32: each frame's own action (what stats describe)
    dataset: np.ndarray  # (N,) int8 index into names
    episode: np.ndarray  # (N,) int32, unique across sub-datasets
    split: np.ndarray  # (N,) int8: 0 train, 1 eval
    dataset_stats: dict  # name -> that dataset's meta/stats.json

    @property
    def chunk(self) -> int:
        return int(self.actions.shape[1])

    @property
    def motors(self) -> int:
        return int(self.actions.shape[2])

    @property
    def train_index(self) -> np.ndarray:
        chosen = [self.names.index(n) for n in self.train_names]
        return np.flatnonzero((self.split == 0) & np.isin(self.dataset, chosen))

    def eval_draw(self) -> np.ndarray:
        """The fixed 256-frame eval draw of this corpus, over every sub-dataset: the same frames
        whatever the training seed or the datasets trained on."""
        pool = np.flatnonzero(self.split == 1)
        rng = np.random.default_rng(EVAL_SEED)
        return np.sort(rng.choice(pool, size=min(EVAL_FRAMES, len(pool)), replace=False))

    def train_slice(self) -> np.ndarray:
        """A fixed slice of the training frames, probed like the eval draw."""
        pool = self.train_index
        rng = np.random.default_rng(SLICE_SEED)
        return np.sort(rng.choice(pool, size=min(TRAIN_SLICE, len(pool)), replace=False))

    def stats(self) -> NormStats:
        """The normalisation the datasets' own meta/stats.json give for the datasets trained
        on: action q01/q99 and state mean/std, pooled by frame count over several."""
        parts = [self.dataset_stats[n] for n in self.train_names]
        try:
            return NormStats.pooled([(p[lerobot.STATE_KEY], p[lerobot.ACTION_KEY]) for p in parts])
        except (KeyError, TypeError, ValueError) as exc:
            raise CorpusError(
                f"{self.root}: meta/stats.json: expected {lerobot.STATE_KEY} "
                f"mean/std/count and {lerobot.ACTION_KEY} q01/q99/count ({exc})"
            ) from None

    def recomputed_stats(self) -> NormStats:
        """The same quantities computed from the training frames of the chosen datasets."""
        train = self.train_index
        return NormStats.compute(self.states[train], self.frame_actions[train])


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


def generate(seed: int = 0) -> dict[str, Generated]:
    """Render every episode of every sub-dataset (deterministic for a seed)."""
    out = {}
    for ds_index, name in enumerate(DATASETS):
        rng = np.random.default_rng([seed, VERSION, ds_index])
        n_eps = EPISODES[name]
        frames, states, actions = [], [], []
        for _ in range(n_eps):
            obj_xy = np.array([rng.uniform(0.18, 0.82), rng.uniform(0.15, 0.62)])
            obj_size = rng.uniform(0.12, 0.2) if name == "demos" else rng.uniform(0.1, 0.16)
            poses = _episode_poses(rng, obj_xy, obj_size)
            frames.append(_render(name, rng, poses, obj_xy, obj_size))
            states.append((poses + rng.normal(0, 0.3, size=poses.shape)).astype(np.float32))
            actions.append(poses[np.minimum(np.arange(EPISODE_LEN) + 1, EPISODE_LEN - 1)])
        # episodes are drawn independently, so the last tenth is as good an eval split as any
        out[name] = Generated(frames, states, actions, n_eps - max(1, int(n_eps * EVAL_FRACTION)))
    return out


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(root: Path) -> list[Path]:
    """Every file the corpus writes, relative to root (the marker and the manifest aside)."""
    return sorted(
        p.relative_to(root) for name in DATASETS for p in (root / name).rglob("*") if p.is_file()
    )


def _manifest_ok(root: Path, seed: int) -> bool:
    try:
        manifest = json.loads((root / "manifest.json").read_text())
        if manifest.get("version") != VERSION or manifest.get("seed") != seed:
            return False
        files = manifest["files"]
        if sorted(files) != [str(p) for p in _files(root)]:
            return False
        for rel, entry in files.items():
            path = root / rel
            if path.stat().st_size != entry["bytes"] or _sha256(path) != entry["sha256"]:
                return False
        return True
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


MARKER = ".fontaine-engine-corpus"  # written by build() into every folder it creates
OURS = frozenset({*DATASETS, "manifest.json", MARKER})
# what lerobot.write() puts in a dataset folder: only these are ever deleted
WRITTEN = (
    lerobot.INFO_PATH,
    lerobot.STATS_PATH,
    lerobot.TASKS_PATH,
    "meta/episodes/chunk-*/file-*.parquet",
    "data/chunk-*/file-*.parquet",
    f"videos/{CAMERA}/chunk-*/file-*.mp4",
)


def is_ours(root: Path) -> bool:
    """Did build() create this folder? (Only such a folder may ever be rebuilt.)"""
    return (root / MARKER).is_file()


def is_dataset_folder(root: Path) -> bool:
    """A LeRobotDataset folder, or a folder holding one or more."""
    return lerobot.is_dataset(root) or any(lerobot.is_dataset(p) for p in _subfolders(root))


def _subfolders(root: Path) -> list[Path]:
    try:
        return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def check_dir(root: Path, seed: int = 0) -> str:
    """What ensure() would do with root: "use", "build" or "rebuild".

    Raises CorpusError, touching nothing, for a path that is not a folder, a folder that holds
    anything without the engine's marker (unless it is a LeRobotDataset folder or a folder of
    them, which is read as a dataset), or a marked folder that also holds files the engine did
    not write.
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
        if is_dataset_folder(root):
            return "use"
        raise CorpusError(
            f"{root}: not a corpus the engine made (no {MARKER} marker) and not a dataset it "
            f"can read (expected {lerobot.INFO_PATH} of a LeRobotDataset, or sub-folders that "
            "hold one); nothing in it was touched"
        )
    foreign = [name for name in entries if name not in OURS]
    foreign += [
        str(p) for name in DATASETS if (root / name).is_dir() for p in _unwritten(root / name)
    ]
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise CorpusError(
            f"{root}: the corpus cache needs rebuilding but also holds files the "
            f"engine did not write ({shown}); move them out, nothing was touched"
        )
    return "rebuild"


def _written(folder: Path) -> list[Path]:
    return [p for pattern in WRITTEN for p in folder.glob(pattern) if p.is_file()]


def _unwritten(folder: Path) -> list[Path]:
    mine = set(_written(folder))
    return [
        p.relative_to(folder.parent) for p in folder.rglob("*") if p.is_file() and p not in mine
    ]


def _discard(folder: Path) -> None:
    """Remove a corpus folder of ours: only the files build() writes, then the emptied folders.
    Anything else found in it stays (and so do the folders holding it)."""
    for name in DATASETS:
        sub = folder / name
        for path in _written(sub):
            path.unlink(missing_ok=True)
        for d in sorted((p for p in sub.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            try:
                d.rmdir()
            except OSError:
                pass
        try:
            sub.rmdir()
        except OSError:
            pass
    for name in ("manifest.json", MARKER):
        (folder / name).unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:
        pass


def write_corpus(folder: Path, seed: int = 0) -> None:
    """Render the corpus and write it into folder (new or empty) as LeRobotDatasets."""
    for name, gen in generate(seed).items():
        lerobot.write(
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
    files = {
        str(rel): {"bytes": (folder / rel).stat().st_size, "sha256": _sha256(folder / rel)}
        for rel in _files(folder)
    }
    manifest = {
        "version": VERSION,
        "seed": seed,
        "format": "LeRobotDataset v3.0",
        "image_size": IMAGE_SIZE,
        "fps": FPS,
        "chunk": CHUNK,
        "datasets": list(DATASETS),
        "created": time.time(),
        "files": files,
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))


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
        (tmp / MARKER).write_text(
            "created by the fontaine engine's corpus builder; "
            "the engine may delete and rebuild this folder\n"
        )
        write_corpus(tmp, seed)
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
    """Make root hold a valid corpus (or a dataset to read); returns True when it had to be
    (re)built. Raises CorpusError when root is not ours to write (see check_dir)."""
    root = root.resolve()  # a symlinked folder: act on the folder, never on the link
    if _manifest_ok(root, seed):
        return False
    if check_dir(root, seed) == "use":  # a user's dataset: read, never written
        return False
    try:
        build(root, seed)
    except OSError as exc:
        raise CorpusError(f"cannot write corpus cache {root}: {exc}") from exc
    return True


def dataset_folders(root: Path) -> list[Path]:
    """The sub-dataset folders of root, in the manifest's order for the corpus, else by name;
    root itself when it is one LeRobotDataset."""
    if lerobot.is_dataset(root):
        return [root]
    try:
        order = json.loads((root / "manifest.json").read_text()).get("datasets") or []
    except (OSError, ValueError, AttributeError):
        order = []
    found = [p for p in _subfolders(root) if lerobot.is_dataset(p)]
    rank = {name: i for i, name in enumerate(order)}
    return sorted(found, key=lambda p: (rank.get(p.name, len(rank)), p.name))


def _holdout(name: str, n_eps: int) -> set[int]:
    """Eval episodes for a dataset without an eval split: a fixed tenth, drawn by its name."""
    seed = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)
    rng = np.random.default_rng([seed, EVAL_SEED])
    return set(rng.choice(n_eps, size=max(1, int(n_eps * EVAL_FRACTION)), replace=False).tolist())


def dataset_names(text: str | None) -> tuple[str, ...]:
    """`--datasets demos,rig` as names (empty: every sub-dataset)."""
    return tuple(n.strip() for n in (text or "").split(",") if n.strip())


def check_datasets(chosen: Sequence[str], names: Sequence[str], root: Path) -> None:
    """CorpusError unless every chosen sub-dataset is one of `names` (those under root)."""
    unknown = [n for n in chosen if n not in names]
    if unknown:
        raise CorpusError(
            f"--datasets {','.join(chosen)}: {', '.join(unknown)} not found under "
            f"{root} (expected some of: {','.join(names)})"
        )


def load(
    root: Path,
    datasets: Sequence[str] | None = None,
    image_size: int = IMAGE_SIZE,
    camera: str | None = None,
) -> Corpus:
    """Every sub-dataset under root, with `datasets` (default: all) chosen to train on."""
    root = Path(root)
    folders = dataset_folders(root)
    if not folders:
        raise CorpusError(
            f"{root}: no LeRobotDataset found (expected {lerobot.INFO_PATH} in it "
            "or in its sub-folders)"
        )
    names = tuple(p.name for p in folders)
    chosen = tuple(datasets) if datasets else names
    check_datasets(chosen, names, root)
    parts: dict[str, list[np.ndarray]] = {
        k: []
        for k in ("images", "states", "actions", "frame_actions", "dataset", "episode", "split")
    }
    stats, fps, shapes, first_episode = {}, None, None, 0
    try:
        for ds_index, folder in enumerate(folders):
            ds = lerobot.read(folder, camera)
            if fps is not None and ds.fps != fps:
                raise CorpusError(
                    f"{folder}: fps {ds.fps} differs from {folders[0].name}'s {fps} "
                    "(expected one frame rate across the datasets)"
                )
            fps = ds.fps
            shape = (ds.state.shape[1], ds.action.shape[1])
            if shapes is not None and shape != shapes:
                raise CorpusError(
                    f"{folder}: state/action sizes {shape} differ from {folders[0].name}'s {shapes}"
                )
            shapes = shape
            chunk = chunk_for(ds.fps)
            n = len(ds.timestamp)
            rows = np.arange(n)
            ends = np.empty(n, dtype=np.int64)
            split = np.zeros(n, dtype=np.int8)
            evals = ds.eval_episodes() or _holdout(ds.name, len(ds.episodes))
            for ep in ds.episodes:
                ends[ep.start : ep.start + ep.length] = ep.start + ep.length - 1
                if ep.index in evals:
                    split[ep.start : ep.start + ep.length] = 1
            # the chunk at a frame: its own action and the next chunk-1, the last one repeated
            # past the episode's end (lerobot pads the same way)
            idx = np.minimum(rows[:, None] + np.arange(chunk)[None, :], ends[:, None])
            parts["images"].append(lerobot.frames(ds, image_size))
            parts["states"].append(ds.state)
            parts["actions"].append(ds.action[idx])
            parts["frame_actions"].append(ds.action)
            parts["dataset"].append(np.full(n, ds_index, dtype=np.int8))
            parts["episode"].append((first_episode + ds.episode_index).astype(np.int32))
            parts["split"].append(split)
            first_episode += int(ds.episode_index.max()) + 1 if n else 0
            stats[ds.name] = ds.stats
    except lerobot.DatasetError as exc:
        raise CorpusError(str(exc)) from None
    arrays = {k: (v[0] if len(v) == 1 else np.concatenate(v)) for k, v in parts.items()}
    return Corpus(
        root=root, names=names, train_names=chosen, fps=int(fps or 0), dataset_stats=stats, **arrays
    )
