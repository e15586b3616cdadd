"""Normalization stats: action quantiles to [-1, 1], state mean/std."""

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

    def to_tensor(self) -> torch.Tensor:
        """Pack into one (4, 6) float64 tensor, for broadcasting across ranks."""
        return torch.from_numpy(np.stack([self.action_q01, self.action_q99,
                                          self.state_mean, self.state_std]).astype(np.float64))

    @classmethod
    def from_tensor(cls, t: torch.Tensor) -> NormStats:
        a = t.detach().cpu().numpy().astype(np.float32)
        return cls(action_q01=a[0], action_q99=a[1], state_mean=a[2], state_std=a[3])

    def to_json(self) -> dict:
        return {"action_q01": self.action_q01.tolist(), "action_q99": self.action_q99.tolist(),
                "state_mean": self.state_mean.tolist(), "state_std": self.state_std.tolist()}

    @classmethod
    def from_json(cls, d: dict) -> NormStats:
        return cls(**{k: np.asarray(d[k], dtype=np.float32) for k in
                      ("action_q01", "action_q99", "state_mean", "state_std")})

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=1))

    @classmethod
    def load(cls, path: Path) -> NormStats:
        return cls.from_json(json.loads(path.read_text()))

    # numpy (workers) -------------------------------------------------------------
    def norm_actions(self, a: np.ndarray) -> np.ndarray:
        span = np.maximum(self.action_q99 - self.action_q01, 1e-6)
        return np.clip(2.0 * (a - self.action_q01) / span - 1.0, -1.0, 1.0)

    def norm_state(self, s: np.ndarray) -> np.ndarray:
        return (s - self.state_mean) / self.state_std

    # torch (eval) ----------------------------------------------------------------
    def unnorm_actions(self, a: torch.Tensor) -> torch.Tensor:
        lo = torch.as_tensor(self.action_q01, device=a.device, dtype=a.dtype)
        hi = torch.as_tensor(self.action_q99, device=a.device, dtype=a.dtype)
        return (a.clamp(-1, 1) + 1.0) / 2.0 * (hi - lo) + lo
