"""Where the primary rule reads, and what each dataset reads there.

The read is at the endpoint's probe, a provisional read before it, or no read (naming where
the run's probes are); `datasets_read` gives every dataset of the eval breakdown at it."""

from __future__ import annotations

from collections.abc import Mapping

from fontaine_tui.core.log.records import Probe
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.rule import VerdictSpec


def probes_at(probes: Mapping[int, Probe], shown: int = 4) -> str:
    """Where a run's probes are (the first few and the last), for a rule whose step has none.

    A trainer that probes at global_step - 1 logs 9, 19, 29 where the preset says 10."""
    steps = sorted(probes)
    if not steps:
        return "the run has no probes"
    few = steps if len(steps) <= shown + 1 else [*steps[:shown], "...", steps[-1]]
    return f"the run's probes are at {', '.join(map(str, few))}"


def off_cadence(probes: Mapping[int, Probe], step: int) -> str:
    """Why `step` will not be probed, else "".

    That is when the run probes at a steady cadence that misses it (probes at 9, 19, 29 and an
    endpoint of 40)."""
    steps = sorted(probes)
    if len(steps) < 2 or step in probes or step < steps[-1]:
        return ""
    every = steps[1] - steps[0]
    if (
        any(b - a != every for a, b in zip(steps, steps[1:], strict=False))
        or (step - steps[-1]) % every == 0
    ):
        return ""
    return (
        f"the endpoint (step {step}) is off the run's probe cadence; {probes_at(probes)} "
        f"(every {every})"
    )


def read_point(
    store: RunStore, endpoint: int, at_step: int | None = None
) -> tuple[int | None, bool, str]:
    """Where the primary rule reads: (step, provisional, why there is no read).

    The final read is at the endpoint in force and nowhere else. Without a probe there, a
    run that can still reach it reads PROVISIONAL at its latest probe before it; once the run
    has ended or logged a later step, it never will, and the read is UNDECIDABLE naming the
    endpoint (a probe after it never stands in). A read asked for at another step
    (`at_step`) is never final."""
    if at_step is not None:
        return at_step, at_step != endpoint, ""
    if endpoint in store.probes:
        return endpoint, False, ""
    why = f"no probe at the endpoint (step {endpoint}); {probes_at(store.probes)}"
    later = store.last_step
    if later > endpoint:
        return endpoint, False, f"{why}; the log reached step {later}"
    if store.ended_at is not None:
        return endpoint, False, f"{why}; the run ended at step {store.ended_at}"
    before = [s for s in store.probes if s < endpoint]
    return max(before, default=None), True, ""


def datasets_read(
    probes: Mapping[int, Probe], spec: VerdictSpec, read_step: int | None
) -> dict[str, float]:
    """Every dataset of the eval breakdown, read as the primary rule reads.

    That is a delta from the anchor probe, or a level. verdict.json carries them whatever the
    rules are."""
    if read_step is None or read_step not in probes:
        return {}
    at = probes[read_step].breakdown
    if spec.read == "level":
        return dict(sorted(at.items()))
    base = probes.get(spec.anchor_step)
    if base is None:
        return {}
    return {k: v - base.breakdown[k] for k, v in sorted(at.items()) if k in base.breakdown}
