"""Normalization stats: action quantiles q01/q99 to [-1, 1], state mean/std.

Targets are not clipped: an action outside [q01, q99] normalises to beyond +-1 (as lerobot
and openpi do), so the flow targets and the raw MAE see it; only the AR tokens saturate at the
edge bins (pipeline.tokenize)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch


@dataclass(frozen=True, slots=True)
class NormStats:
    action_q01: np.ndarray  # (6,)
    action_q99: np.ndarray
    state_mean: np.ndarray
    state_std: np.ndarray

    @classmethod
    def compute(cls, states: np.ndarray, actions: np.ndarray) -> NormStats:
        flat = np.asarray(actions, dtype=np.float64).reshape(-1, actions.shape[-1])
        st = np.asarray(states, dtype=np.float64)
        return cls(
            action_q01=np.quantile(flat, 0.01, axis=0).astype(np.float32),
            action_q99=np.quantile(flat, 0.99, axis=0).astype(np.float32),
            state_mean=st.mean(axis=0).astype(np.float32),
            state_std=np.maximum(st.std(axis=0), 1e-3).astype(np.float32),
        )

    @classmethod
    def pooled(cls, parts: list[tuple[dict, dict]]) -> NormStats:
        """Pool the stats of one or more datasets from lerobot stats.json entries.

        The entries are state {mean, std, count} and action {q01, q99, count}. Mean and std are
        pooled exactly, quantiles weighted by count (as lerobot's aggregate_stats does).
        """

        def arr(d: dict, key: str) -> np.ndarray:
            return np.asarray(d[key], dtype=np.float64).reshape(-1)

        sc = np.array([float(arr(s, "count")[0]) for s, _ in parts])
        ac = np.array([float(arr(a, "count")[0]) for _, a in parts])
        means = np.stack([arr(s, "mean") for s, _ in parts])
        stds = np.stack([arr(s, "std") for s, _ in parts])
        w = sc[:, None] / sc.sum()
        mean = (w * means).sum(axis=0)
        var = (w * (stds**2 + (means - mean) ** 2)).sum(axis=0)
        wa = ac[:, None] / ac.sum()
        return cls(
            action_q01=(wa * np.stack([arr(a, "q01") for _, a in parts]))
            .sum(axis=0)
            .astype(np.float32),
            action_q99=(wa * np.stack([arr(a, "q99") for _, a in parts]))
            .sum(axis=0)
            .astype(np.float32),
            state_mean=mean.astype(np.float32),
            state_std=np.maximum(np.sqrt(var), 1e-3).astype(np.float32),
        )

    def to_tensor(self) -> torch.Tensor:
        """Pack into one flat float64 tensor (q01, q99, mean, std), for broadcasting."""
        return torch.from_numpy(
            np.concatenate(
                [self.action_q01, self.action_q99, self.state_mean, self.state_std]
            ).astype(np.float64)
        )

    @classmethod
    def from_tensor(cls, t: torch.Tensor, action_dim: int) -> NormStats:
        a = t.detach().cpu().numpy().astype(np.float32)
        s = (len(a) - 2 * action_dim) // 2
        return cls(
            action_q01=a[:action_dim],
            action_q99=a[action_dim : 2 * action_dim],
            state_mean=a[2 * action_dim : 2 * action_dim + s],
            state_std=a[2 * action_dim + s :],
        )

    def to_json(self) -> dict:
        return {
            "action_q01": self.action_q01.tolist(),
            "action_q99": self.action_q99.tolist(),
            "state_mean": self.state_mean.tolist(),
            "state_std": self.state_std.tolist(),
        }

    @classmethod
    def from_json(cls, d: dict) -> NormStats:
        return cls(
            **{
                k: np.asarray(d[k], dtype=np.float32)
                for k in ("action_q01", "action_q99", "state_mean", "state_std")
            }
        )

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=1))

    @classmethod
    def load(cls, path: Path) -> NormStats:
        return cls.from_json(json.loads(path.read_text()))

    # numpy (workers) -------------------------------------------------------------
    def norm_actions(self, a: np.ndarray) -> np.ndarray:
        span = np.maximum(self.action_q99 - self.action_q01, 1e-6)
        return 2.0 * (a - self.action_q01) / span - 1.0

    def norm_state(self, s: np.ndarray) -> np.ndarray:
        return (s - self.state_mean) / self.state_std

    # torch (eval) ----------------------------------------------------------------
    def unnorm_actions(self, a: torch.Tensor) -> torch.Tensor:
        lo = torch.as_tensor(self.action_q01, device=a.device, dtype=a.dtype)
        hi = torch.as_tensor(self.action_q99, device=a.device, dtype=a.dtype)
        return (a + 1.0) / 2.0 * (hi - lo) + lo
