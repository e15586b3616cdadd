"""When `[gates] stop_on_lock` stops a run: its decision locked, or its GPU-hours gate reached.

Once the verdict's decision lock holds before the endpoint (core/verdict/lock.py: no remaining
probe can change it) and stands as the stopped run's verdict will hold it
(core/verdict/stopped.py), or the GPU-hours gate is reached (alerts.gpu_hours at "alert"), the run
has nothing more to say for its question: the watcher stops it the way `fontaine-tui stop`
does (SIGINT, so the engine checkpoints) and the attempt ends with this cause
(exits.GATE_STOPS).
"""

from __future__ import annotations

from collections.abc import Iterable

from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.verdict.blind import HIDDEN, hidden
from fontaine_tui.core.verdict.record import Verdict
from fontaine_tui.core.verdict.stopped import lock_doubt
from fontaine_tui.core.watch.alerts import RunWarning


def gate_stop(
    store: RunStore,
    preset: Preset,
    verdict: Verdict,
    warnings: Iterable[RunWarning],
    *,
    asked_blind: bool,
) -> tuple[str, str] | None:
    """(cause, in words) when the preset asks for a stop now, else None.

    The cause is "decision-locked" while the read is still provisional and its decision lock
    stands as the verdict of the stopped run will hold it (core/verdict/stopped.py's
    lock_doubt, the one check of a lock), or "gpu-hours-gate" with the GPU-hours gate's alert
    up. The words name the locked label only where the read is not hidden (blind.hidden;
    `asked_blind`: the watcher's --blind)."""
    if not preset.stops_on_lock:
        return None
    lock = verdict.decision
    if verdict.provisional and lock is not None and not lock_doubt(store, preset, verdict):
        label = HIDDEN if hidden(preset, verdict, asked_blind) else lock.label
        return "decision-locked", f"decision locked at step {lock.step} ({label})"
    gate = next((w for w in warnings if w.rule == "gpu-hours" and w.severity == "alert"), None)
    if gate is not None:
        return "gpu-hours-gate", f"gpu-hours gate: {gate.message}"
    return None
