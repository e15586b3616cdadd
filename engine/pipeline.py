"""Input pipeline: deterministic micro-batches, augmentation, action tokens, flow noise.

Every random draw a sample needs (augmentation, flow time and noise) comes from a
generator keyed by (seed, step, global slot), so the same optimizer step sees the same
numbers whether it runs as 1 process x 8 chunks or 2 ranks x 4 chunks. That is what
makes the parity check meaningful, and what makes a resumed run replay its data.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from .corpus import Corpus
from .stats import NormStats

BINS = 256
PR_SET_PDEATHSIG = 1  # prctl(2)
FLOW_SAMPLES = 4  # flow-matching time samples per example (MolmoAct2 uses 8)


def tokenize(norm_actions: np.ndarray) -> np.ndarray:
    """Uniform 256 bins over [-1, 1]; targets beyond q01/q99 fall in the edge bins."""
    return np.clip(np.floor((norm_actions + 1.0) / 2.0 * BINS), 0, BINS - 1).astype(np.int64)


def flow_time(rng: np.random.Generator, size) -> np.ndarray:
    """openpi: t ~ Beta(1.5, 1) * 0.999 + 0.001."""
    return (rng.beta(1.5, 1.0, size=size) * 0.999 + 0.001).astype(np.float32)


DEFAULT_CHUNKS = (
    8  # backward chunks per rank when neither --backward-chunks nor --micro-batch is given
)


class LayoutError(ValueError):
    """A batch that cannot be cut as asked; the message names the numbers."""


def chunks_per_rank(
    batch_size: int, world_size: int, chunks: int | None = None, micro: int = 0
) -> int:
    """Backward chunks per rank, from the batch size, the world size and the micro-batch.

    With the per-rank micro-batch stated (micro > 0): chunks = batch_size / (micro x
    world_size), a whole number >= 1, and a chunk count given as well must be that number.
    Without it: chunks (default DEFAULT_CHUNKS) x world_size must divide batch_size.
    """
    if micro > 0:
        per_rank, rest = divmod(batch_size, micro * world_size)
        if rest or per_rank < 1:
            raise LayoutError(
                f"--batch-size {batch_size}: expected a multiple of --micro-batch x world size "
                f"({micro} x {world_size} = {micro * world_size}), for whole backward chunks per rank"
            )
        if chunks is not None and chunks != per_rank:
            raise LayoutError(
                f"--backward-chunks {chunks} and --micro-batch {micro} disagree: batch "
                f"{batch_size} / ({micro} x world size {world_size}) = {per_rank} chunk(s) per "
                "rank (give one of them)"
            )
        return per_rank
    chunks = DEFAULT_CHUNKS if chunks is None else chunks
    if batch_size % (chunks * world_size):
        raise LayoutError(
            f"--batch-size {batch_size}: expected a multiple of --backward-chunks x world size "
            f"({chunks} x {world_size} = {chunks * world_size}); or state the per-rank "
            "micro-batch with --micro-batch M (chunks per rank = batch-size / (M x world size))"
        )
    return chunks


@dataclass(frozen=True, slots=True)
class Layout:
    """How one optimizer step's global batch is cut across ranks and chunks.

    Global slot = rank x (batch_size / world_size) + chunk x micro + i: rank-major, so a
    sample keeps its slot (and its data and random draws) however the batch is cut, e.g.
    1 process x 8 chunks of 12 and 8 ranks x 1 chunk of 12 take slots 0..95 alike."""

    batch_size: int
    chunks: int
    world_size: int
    rank: int

    @classmethod
    def of(
        cls, batch_size: int, world_size: int, rank: int, chunks: int | None = None, micro: int = 0
    ) -> Layout:
        """The layout of `chunks_per_rank`'s rule (LayoutError when the batch cannot be cut)."""
        return cls(
            batch_size, chunks_per_rank(batch_size, world_size, chunks, micro), world_size, rank
        )

    @property
    def micro(self) -> int:
        return self.batch_size // self.chunks // self.world_size

    def slots(self, chunk: int) -> np.ndarray:
        start = self.rank * (self.batch_size // self.world_size) + chunk * self.micro
        return np.arange(start, start + self.micro)


def _images(raw: np.ndarray) -> np.ndarray:
    """Turn uint8 (B, cameras, H, W, C) into float (B, cameras, C, H, W) in [-1, 1].

    This is SigLIP's 0.5/0.5 normalization.
    """
    return (raw.astype(np.float32) / 127.5 - 1.0).transpose(0, 1, 4, 2, 3)


def history_rows(corpus: Corpus, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B, history + 1) rows of frames idx and their `history` past frames, oldest first.

    It also says which of them lie before the episode's first frame (lerobot's
    delta_timestamps query: the row clamped to the episode, the step flagged as padding).
    """
    want = idx[:, None] - np.arange(corpus.history, -1, -1)[None, :]
    first = np.asarray(corpus.first[idx])[:, None]
    return np.maximum(want, first), want < first


def camera_frames(corpus: Corpus, idx: np.ndarray) -> np.ndarray:
    """Every camera's frame of frames idx, (B, steps x cameras, H, W, 3) float32.

    With --history their past frames come too (step-major, oldest first), in the corpus's
    camera order.
    """
    rows = history_rows(corpus, idx)[0].ravel()
    per = np.stack([np.asarray(cam[rows]) for cam in corpus.images], axis=1)
    return per.reshape(len(idx), -1, *per.shape[2:]).astype(np.float32)


def _augment(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random 1-px shift crop (edge padded) and colour jitter on one HWC float image."""
    h, w, _ = img.shape
    dy, dx = rng.integers(-1, 2, size=2)
    padded = np.pad(img, ((1, 1), (1, 1), (0, 0)), mode="edge")
    img = padded[1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w]
    gain = rng.uniform(0.8, 1.2) * rng.uniform(0.95, 1.05, size=3)
    mean = img.mean()
    contrast = rng.uniform(0.8, 1.2)
    return np.clip(((img - mean) * contrast + mean) * gain, 0, 255)  # a pixel stays a pixel


class StepBatches(Dataset):
    """Map-style dataset keyed by optimizer step: one item holds a rank's micro-batches.

    An item holds this rank's micro-batches for that step, stacked on a leading chunk
    dimension: one worker->main transfer per step, not one per chunk (each transfer costs the
    main process a few milliseconds).
    """

    def __init__(
        self, corpus: Corpus, stats: NormStats, layout: Layout, seed: int, augment: float
    ) -> None:
        self.corpus, self.stats, self.layout = corpus, stats, layout
        self.seed, self.augment = seed, augment
        self.train = corpus.train_index
        self._perms: dict[int, np.ndarray] = {}

    def __len__(self) -> int:  # keys are not positional
        return 0

    def _perm(self, epoch: int) -> np.ndarray:
        if epoch not in self._perms:
            if len(self._perms) > 2:
                self._perms.pop(min(self._perms))
            self._perms[epoch] = np.random.default_rng([self.seed, epoch]).permutation(
                len(self.train)
            )
        return self._perms[epoch]

    def indices(self, step: int, chunk: int) -> np.ndarray:
        pos = step * self.layout.batch_size + self.layout.slots(chunk)
        n = len(self.train)
        return np.array([self.train[self._perm(int(p // n))[p % n]] for p in pos])

    def __getitem__(self, step: int) -> dict[str, torch.Tensor]:
        parts = [self.micro(step, k) for k in range(self.layout.chunks)]
        return {key: torch.stack([p[key] for p in parts]) for key in parts[0]}

    def micro(self, step: int, chunk: int) -> dict[str, torch.Tensor]:
        idx = self.indices(step, chunk)
        images = camera_frames(self.corpus, idx)
        times, noises = [], []
        for i, slot in enumerate(self.layout.slots(chunk)):
            rng = np.random.default_rng([self.seed, step, int(slot), 0xA5])
            if rng.random() < self.augment:
                for c in range(images.shape[1]):  # each camera its own shift and colour
                    images[i, c] = _augment(images[i, c], rng)
            times.append(flow_time(rng, FLOW_SAMPLES))
            noises.append(
                rng.standard_normal(
                    (FLOW_SAMPLES, *self.corpus.actions.shape[1:]), dtype=np.float32
                )
            )
        batch = encode(self.corpus, idx, self.stats, images)
        batch["flow_t"] = torch.from_numpy(np.stack(times))
        batch["flow_noise"] = torch.from_numpy(np.stack(noises))
        return batch


def encode(
    corpus: Corpus, idx: np.ndarray, stats: NormStats, images: np.ndarray | None = None
) -> dict[str, torch.Tensor]:
    """Model inputs and targets for frames idx.

    The images are given as float (B, cameras, H, W, C) if augmented.
    """
    if images is None:
        images = camera_frames(corpus, idx)
    raw_actions = np.asarray(corpus.actions[idx], dtype=np.float32)
    actions = stats.norm_actions(raw_actions).astype(np.float32)
    rows, past_pad = history_rows(corpus, idx)
    state = stats.norm_state(np.asarray(corpus.states[rows if corpus.history else idx]))
    extra = {"observation_is_pad": torch.from_numpy(past_pad)} if corpus.history else {}
    return {
        **extra,
        "images": torch.from_numpy(np.ascontiguousarray(_images(images))),
        "state": torch.from_numpy(state.astype(np.float32)),  # (B, S); (B, steps, S): history
        "actions": torch.from_numpy(actions),
        "raw_actions": torch.from_numpy(raw_actions),
        "tokens": torch.from_numpy(tokenize(actions).reshape(len(idx), -1)),
        "action_is_pad": torch.from_numpy(np.asarray(corpus.action_is_pad[idx], dtype=np.bool_)),
        "dataset": torch.from_numpy(np.asarray(corpus.dataset[idx], dtype=np.int64)),
        # each frame's task as language tokens (engine/text.py), padding masked
        "text": torch.from_numpy(corpus.text_ids[corpus.task[idx]]),
        "text_mask": torch.from_numpy(corpus.text_mask[corpus.task[idx]]),
    }


def probe_batch(
    corpus: Corpus, idx: np.ndarray, stats: NormStats, seed: int
) -> dict[str, torch.Tensor]:
    """An un-augmented batch with fixed flow noise (for the eval probe)."""
    batch = encode(corpus, idx, stats)
    rng = np.random.default_rng([seed, 0xE5A1])
    batch["flow_t"] = torch.from_numpy(flow_time(rng, (len(idx), FLOW_SAMPLES)))
    batch["flow_noise"] = torch.from_numpy(
        rng.standard_normal((len(idx), FLOW_SAMPLES, *corpus.actions.shape[1:]), dtype=np.float32)
    )
    return batch


class StepKeys(Sampler):
    """Step keys [start, stop)."""

    def __init__(self, start: int, stop: int) -> None:
        self.start, self.stop = start, stop

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.start, self.stop))

    def __len__(self) -> int:
        return self.stop - self.start


def _worker_init(_: int) -> None:
    """A loader worker: one thread, deaf to the terminal's Ctrl-C, and dies with its parent.

    The main process decides when to stop (SIGINT or SIGTERM to the process group finishes
    the step first), so a worker ignores those signals from anyone else; but a SIGTERM from
    its parent (multiprocessing's terminate() at the parent's exit) ends it, and so does the
    parent's death (Linux: PR_SET_PDEATHSIG), so a process holding a loader never hangs at
    exit and no worker outlives it."""
    torch.set_num_threads(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    _die_with_parent(parent)
    if not hasattr(signal, "sigwaitinfo"):  # no sender to tell apart: SIGTERM ends it
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # an ignored signal is never pending
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})

    def wait() -> None:
        while True:
            info = signal.sigwaitinfo({signal.SIGTERM})
            if info.si_pid == parent or os.getppid() != parent:
                os._exit(128 + signal.SIGTERM)

    threading.Thread(target=wait, name="sigterm-from-parent", daemon=True).start()


def _die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent dies."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)


def loader(
    dataset: StepBatches, start: int, stop: int, workers: int, prefetch: int, pin: bool
) -> DataLoader:
    # More workers than cores is deliberate (they mostly sleep on a full prefetch queue).
    warnings.filterwarnings("ignore", message="This DataLoader will create")
    more = workers > 0  # prefetch and persistence are for worker processes only
    return DataLoader(
        dataset,
        batch_size=None,
        sampler=StepKeys(start, stop),
        num_workers=workers,
        pin_memory=pin,
        prefetch_factor=prefetch if more else None,
        persistent_workers=more,
        worker_init_fn=_worker_init if more else None,
    )
