"""The verdict of a run stopped on its decision lock, before its endpoint.

A preset with `[gates] stop_on_lock = true` pre-registers that the run stops once no remaining
probe can change the verdict (core/verdict/lock.py). Such a run ends before its endpoint, so the
endpoint's read never comes. Its verdict is then the locked one, read at the last probe before
the end, where the lock computed again from the evidence itself holds there. Without a lock
holding (the run ended for another reason, or stopped at the GPU-hours gate), the read stays
UNDECIDABLE, naming why.
"""

from __future__ import annotations

from dataclasses import replace

from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.checks import UNDECIDABLE
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.verdict.lock import largest_change
from fontaine_tui.core.verdict.record import Verdict


def stopped_early(
    store: RunStore, preset: Preset, v: Verdict, at_step: int | None, ended: int | None = None
) -> int | None:
    """The step a stop_on_lock run ended at before its endpoint, or None.

    The end is the log's `end` event, else `ended`: the step attempts.jsonl says a watcher
    stopped it at on the gate (another trainer's log may never say its run ended). None unless
    the run ended before the endpoint and logged no later step."""
    end = store.ended_at if store.ended_at is not None else ended
    if not preset.stops_on_lock or at_step is not None or end is None:
        return None
    if v.verdict != UNDECIDABLE and not v.provisional:  # a final read waits on nothing
        return None
    return end if _short_of(store, end, v.endpoint_step) else None


def _short_of(store: RunStore, end: int, endpoint: int) -> bool:
    """Whether a run that ended at `end` stopped short of `endpoint`, with a probe by then.

    Not where the endpoint was probed, or the log went on past it."""
    if endpoint in store.probes or end >= endpoint or store.last_step > endpoint:
        return False
    return any(s <= end for s in store.probes)


def _doubt(
    store: RunStore, preset: Preset, early: Verdict, lock_step: int, most: float, every: int | None
) -> str:
    """Why the lock cannot stand for the endpoint's read ("" when it can).

    A stop before any probe after the anchor leaves no delta read; and the lock assumes no probe
    moves the read by more than `most` (per `every` steps, as the lock counts probes), which the
    run's own probes from the anchor on may already contradict."""
    spec = preset.verdict
    if spec.read != "level" and (early.read_step or 0) <= spec.anchor_step:
        return (
            f"the decision locked at step {lock_step}, but no probe after the anchor (step "
            f"{spec.anchor_step}) had been read when the run stopped"
        )
    found = _largest_change_read(store, preset, early.read_step or 0, every)
    if found is not None and found[0] > most:
        change, a, b = found
        return (
            f"the lock assumed a probe moves the read by at most {most:g}, but it moved "
            f"{change:.4g} from step {a} to {b}"
        )
    return ""


def _largest_change_read(
    store: RunStore, preset: Preset, upto: int, every: int | None
) -> tuple[float, int, int] | None:
    """The largest change between the probes the read is made of, up to step `upto`.

    From the anchor on (every probe for a level read), per `every` steps (largest_change)."""
    spec = preset.verdict
    first = spec.anchor_step if spec.read != "level" else 0
    steps = sorted(s for s in store.probes if first <= s <= upto)
    return largest_change([(s, store.probes[s].value(spec.metric)) for s in steps], every)


def lock_doubt(store: RunStore, preset: Preset, v: Verdict) -> str:
    """Why the decision lock of the read `v` cannot stand for the endpoint's read ("" when it can).

    The one check of a lock: the verdict of a run stopped on it (stopped_verdict) and the
    stop_on_lock gate that stops the run (core/watch/gatestop.py) both ask it, so the gate
    never stops a run on a lock that the verdict then rejects. The lock must hold at `v`'s
    read, the run's own probes must not contradict its premise (_doubt), and it must have
    locked on the label that `v` reads."""
    lock = v.decision
    if lock is None or lock.step is None:
        return lock.describe() if lock is not None else "no read to lock on"
    doubt = _doubt(store, preset, v, lock.step, lock.max_change or 0.0, lock.every)
    if doubt:
        return doubt
    if lock.label != v.verdict:
        return (
            f"the decision locked on {lock.label} but the read at step {v.read_step} "
            f"gives {v.verdict}"
        )
    return ""


def stopped_verdict(
    undecided: Verdict, early: Verdict, end: int, store: RunStore, preset: Preset
) -> Verdict:
    """The verdict of a run that ended at step `end`, before its endpoint.

    `early` is the read at the last probe before the end. It stands when its decision lock
    stands (lock_doubt); else the read stays `undecided` (UNDECIDABLE) and says why."""
    why = lock_doubt(store, preset, early)
    if why:
        return replace(undecided, reason=f"{undecided.reason}; stopped at step {end}: {why}")
    step = early.decision.step if early.decision is not None else None
    return replace(
        early,
        reason=f"stopped at step {end}: decision locked at step {step}; {early.reason}",
    )
