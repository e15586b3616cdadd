"""A preset's `[recovery]`: how often a run is restarted, and after which ends.

```toml
[recovery]
max_restarts = 3                            # 0 (the default): never restarted
on = ["preemption", "oom", "node_failure"]  # the ends that restart it (the default: all three)
backoff_s = 2.0                             # the first restart's wait, doubled each next one
```

A restart resumes the run from its newest checkpoint, as `launch --resume` does, and is a new
attempt in attempts.jsonl (core/run/recovery.py says which ends count). A run that ended on
a non-finite loss, that finished, or that a user or a gate stopped is never restarted, whatever
the preset says. The section enters the canonical form (and prereg.json) only when
max_restarts is above 0, and backoff_s only when set away from its default, so presets
written before them keep their sha256; a change to it after
launch is a change of the frozen contract, and `launch --resume` refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fontaine_tui.core.preset.checks import PresetError, check_keys

CAUSES = ("preemption", "oom", "node_failure")
MAX_RESTARTS = 100  # the bound: a run restarted more often is broken, not unlucky
BACKOFF_S = 2.0  # the first restart's wait (the default); each next one waits twice as long
BACKOFF_MAX_S = 60.0  # the longest wait, and the bound of backoff_s
KEYS = ("max_restarts", "on", "backoff_s")


@dataclass(frozen=True, slots=True)
class RecoverySpec:
    """The restarts a preset allows: how many, after which ends (CAUSES), the first wait."""

    max_restarts: int = 0
    on: tuple[str, ...] = CAUSES
    backoff_s: float = BACKOFF_S

    @property
    def enabled(self) -> bool:
        return self.max_restarts > 0

    def canonical(self) -> dict[str, object]:
        out: dict[str, object] = {"max_restarts": self.max_restarts, "on": sorted(self.on)}
        if self.backoff_s != BACKOFF_S:  # set: presets written before the key keep their sha256
            out["backoff_s"] = self.backoff_s
        return out

    def words(self) -> str:
        """The contract in one phrase: "up to 3 restarts on preemption, oom"."""
        n = self.max_restarts
        return f"up to {n} restart{'s' if n != 1 else ''} on {', '.join(self.on)}"


def read_recovery(path: Path, table: object) -> RecoverySpec:
    """Check `[recovery]`; a key wrong is one `file: key: expected` line."""
    if table is None:
        return RecoverySpec()
    table = check_keys(path, "recovery", table, KEYS)
    n = _max_restarts(path, table.get("max_restarts", 0))
    on = _on(path, table.get("on", list(CAUSES)))
    wait = _backoff(path, table.get("backoff_s", BACKOFF_S))
    return RecoverySpec(n, tuple(c for c in CAUSES if c in on), wait)


def _max_restarts(path: Path, n: object) -> int:
    """recovery.max_restarts: an integer in [0, MAX_RESTARTS]."""
    if type(n) is not int or not 0 <= n <= MAX_RESTARTS:
        raise PresetError(
            path,
            "recovery.max_restarts",
            f"expected an integer in [0, {MAX_RESTARTS}] (0: never restarted), got {n!r}",
        )
    return n


def _on(path: Path, on: object) -> list[str]:
    """recovery.on: a non-empty list of CAUSES, each once (a non-finite loss is none of them)."""
    expected = f"a non-empty list of {', '.join(CAUSES)}"
    if not isinstance(on, list) or not on:
        raise PresetError(path, "recovery.on", f"expected {expected}, got {on!r}")
    for cause in on:
        if cause not in CAUSES:
            never = " (a non-finite loss is never restarted)" if cause == "nan" else ""
            raise PresetError(path, "recovery.on", f"expected {expected}{never}, got {cause!r}")
    if len(set(on)) != len(on):
        raise PresetError(path, "recovery.on", f"expected {expected}, each once, got {on!r}")
    return on


def _backoff(path: Path, wait: Any) -> float:
    """recovery.backoff_s: seconds in [0, BACKOFF_MAX_S], the first restart's wait."""
    if type(wait) not in (int, float) or not 0 <= wait <= BACKOFF_MAX_S:
        raise PresetError(
            path,
            "recovery.backoff_s",
            f"expected seconds in [0, {BACKOFF_MAX_S:g}] (the first restart's wait), got {wait!r}",
        )
    return float(wait)
