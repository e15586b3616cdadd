"""Whether each amendment counts, and the endpoint in force after the applied extends.

An amendment is held to two clocks: the last step seen that its declaration records, and the
log's own clock (`LogClock`): a declaration made after the log had logged a probe at the step
it first affects, or later, is late whatever step it says it saw (a ledger carried over from a
stale copy of the run says less than the log shows). The engine's log records each probe's
time (schema v1 requires it): a probe of it without one, at the step an amendment first
affects or later, leaves that clock nothing to read, and the amendment is refused."""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.log.records import Probe
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import Amendment, Preset
from fontaine_tui.core.runfolder import LOG
from fontaine_tui.core.verdict.prereg import utc_iso
from fontaine_tui.core.verdict.record import AmendmentCheck

# How far the ledger's clock may lag the log's: a run on another host (a Slurm node) logs by
# its clock, `amend` declares by this one's. A declaration dated more than this before the log
# first logged the step it says it saw is refused.
SKEW_S = 600.0


@dataclass(frozen=True, slots=True)
class LogClock:
    """When the log itself says it passed each step: its probes' own times.

    `steps` is sorted; `earliest[i]` is the (time, step) of the probe logged first among those
    at `steps[i]` or later. A probe without a time (0, NaN: a format that records none) is left
    out, so such a log passes no step by its clock. Where the log's format requires a time
    (the engine's schema v1), `untimed` holds the (step, line) of each probe logged without
    one, sorted: the clock cannot say when the log passed those steps."""

    steps: tuple[int, ...] = ()
    earliest: tuple[tuple[float, int], ...] = ()
    untimed: tuple[tuple[int, int], ...] = ()

    @classmethod
    def of(cls, probes: Iterable[Probe], *, time_required: bool = False) -> LogClock:
        """The clock of a log's probes (those a resume superseded included: they were seen).

        `time_required`: the log's format requires each record's time (the engine's log)."""
        timed: list[tuple[int, float]] = []
        untimed: list[tuple[int, int]] = []
        for p in probes:
            if math.isfinite(p.time) and p.time > 0:
                timed.append((p.step, p.time))
            elif time_required:
                untimed.append((p.step, p.line))
        timed.sort()
        earliest: list[tuple[float, int]] = []
        best = (math.inf, 0)
        for step, t in reversed(timed):
            best = min(best, (t, step))
            earliest.append(best)
        return cls(tuple(s for s, _ in timed), tuple(reversed(earliest)), tuple(sorted(untimed)))

    def passed(self, step: int, before: float) -> tuple[int, float] | None:
        """The (step, time) of the first probe at `step` or later logged before `before`."""
        i = bisect.bisect_left(self.steps, step)
        if i == len(self.steps) or self.earliest[i][0] >= before:
            return None
        t, at = self.earliest[i]
        return at, t

    def unreached(self, step: int, at: float) -> tuple[int, float] | None:
        """The log's last probe at `step` or before as (step, time), if first logged after `at`.

        Then the log had not reached `step` at `at` (every later probe came later too). A
        resume logs a step again later; its first logging is the one that counts."""
        i = bisect.bisect_right(self.steps, step) - 1
        if i < 0 or self.earliest[i][0] <= at:
            return None
        return self.steps[i], self.earliest[i][0]

    def unclocked(self, step: int) -> tuple[int, int] | None:
        """The (step, line) of the first probe at `step` or later logged without a time."""
        i = bisect.bisect_left(self.untimed, (step, -1))
        return self.untimed[i] if i < len(self.untimed) else None

    def key(self, before: float) -> tuple[tuple[int, float], ...]:
        """What the checks of declarations made until `before` depend on.

        A probe logged after `before` changes none of them, nor this key; a probe logged
        without a time (where one is required) is in it, as its step and 0."""
        timed = ((s, t) for s, (t, _) in zip(self.steps, self.earliest, strict=True) if t < before)
        return (*timed, *((s, 0.0) for s, _ in self.untimed))


def declared_ts(a: Amendment) -> float | None:
    """When a ledger amendment was declared (epoch seconds); None for a preset's own."""
    if a.source != "ledger" or not a.declared_at.endswith("Z"):
        return None
    try:  # before Python 3.11, fromisoformat takes no "Z"; it is many times strptime's speed
        when = datetime.fromisoformat(a.declared_at[:-1] + "+00:00")
    except ValueError:
        return None
    return when.timestamp() if when.utcoffset() == timedelta(0) else None


def last_declared(amendments: Iterable[Amendment]) -> float:
    """When the latest of the ledger's amendments was declared (-inf for none)."""
    return max((t for a in amendments if (t := declared_ts(a)) is not None), default=-math.inf)


@dataclass(frozen=True, slots=True)
class _Claim:
    """An amendment under check, with what its refusal is decided by.

    The step it first affects (said as `kind` and `where`), the log's `clock` and the
    declaration's time by it (`when`, None without a clock), and what the amendments applied
    before it left in force."""

    a: Amendment
    first: int
    kind: str
    where: str
    clock: LogClock | None
    when: float | None
    endpoint: int
    scale_in_force: bool


def _seen_too_late(c: _Claim) -> str | None:
    """Declared after the step it first affects was seen (by the step it says it saw)."""
    if c.a.declared_after_step < c.first:
        return None
    return (
        f"declared after step {c.a.declared_after_step} was seen; {c.kind} "
        f"must be declared before step {c.first} ({c.where})"
    )


def _not_utc(c: _Claim) -> str | None:
    """A ledger declaration whose time is no UTC time the log's clock can be held to."""
    if c.clock is None or c.a.source != "ledger" or c.when is not None:
        return None
    return (
        f"declared at {c.a.declared_at or '(no time)'}, not a UTC time as amend writes "
        f"one (2026-01-31T12:00:00Z): the log's own clock cannot show it was declared "
        f"before step {c.first} ({c.where})"
    )


def _clock_passed(c: _Claim) -> str | None:
    """The log's clock had logged a probe at the first step affected, or later, before it."""
    late = None if c.clock is None or c.when is None else c.clock.passed(c.first, c.when)
    if late is None:
        return None
    return (
        f"declared at {c.a.declared_at}, but the log's own clock had passed step {c.first} "
        f"({c.where}): its probe at step {late[0]} was logged at {utc_iso(late[1])} (a "
        f"ledger from a copy of the run, whatever step it says it saw)"
    )


def _clock_unreached(c: _Claim) -> str | None:
    """The log's clock had not yet reached the step the declaration says it saw."""
    if c.clock is None or c.when is None:
        return None
    unreached = c.clock.unreached(c.a.declared_after_step, c.when + SKEW_S)
    if unreached is None:
        return None
    return (
        f"declared at {c.a.declared_at}, before the step it says it saw: the log's own "
        f"clock logged its probe at step {unreached[0]} at {utc_iso(unreached[1])}, "
        f"later"
    )


def _clock_gap(c: _Claim) -> str | None:
    """The log shows a probe at the first step affected, or later, without the time it needs."""
    gap = None if c.clock is None or c.when is None else c.clock.unclocked(c.first)
    if gap is None:
        return None
    at = f"{LOG} line {gap[1]}" if gap[1] > 0 else LOG
    return (
        f"declared at {c.a.declared_at}, but {at} logs the probe at step {gap[0]} with "
        f"no `time` (the log's schema requires one): the log's own clock cannot show "
        f"it was declared before step {c.first} ({c.where})"
    )


def _before_step_past_first(c: _Claim) -> str | None:
    """Declared before a step later than the first it affects."""
    if c.a.declared_before_step <= c.first:
        return None
    return (
        f"declared before step {c.a.declared_before_step}, but it affects step "
        f"{c.first} ({c.where})"
    )


def _extend_not_past(c: _Claim) -> str | None:
    """An extend that does not move the endpoint in force later."""
    if c.a.kind != "extend" or c.a.to_step > c.endpoint:
        return None
    return f"moves the endpoint to {c.a.to_step}, not past {c.endpoint} (in force)"


def _second_scale(c: _Claim) -> str | None:
    """A scale amendment after one already applied: only one is in force."""
    if c.a.kind != "scale" or not c.scale_in_force:
        return None
    return "a scale amendment is already in force"


# Why an amendment is refused, first that holds: its own steps, then the log's clock against
# its declared time, then what the amendments applied before it left in force.
_REFUSALS = (
    _seen_too_late,
    _not_utc,
    _clock_passed,
    _clock_unreached,
    _clock_gap,
    _before_step_past_first,
    _extend_not_past,
    _second_scale,
)


def _refusal(claim: _Claim) -> str:
    """Why the amendment is refused: the first of `_REFUSALS` that holds ("" for none)."""
    return next((why for refuse in _REFUSALS if (why := refuse(claim)) is not None), "")


def _declared_delta(a: Amendment) -> AmendmentCheck:
    """A declared delta: it changes no read, so it is shown, never refused."""
    key, ours, theirs = a.delta
    why = f"{key}: ours {ours}, theirs {theirs} ({a.comparator}), declared at launch"
    return AmendmentCheck(a.id, a.kind, a.source, a.declared_at, 0, 0, "declared", why)


def check_amendments(
    amendments: Iterable[Amendment],
    preset: Preset,
    clock: LogClock | None = None,
    *,
    first_probe: int | None = None,
) -> list[AmendmentCheck]:
    """Check which amendments count, by the steps they were declared at and first affect.

    An amendment counts only if the last step seen at declaration precedes the first step it
    affects. A scale amendment first affects the anchor probe (the first delta; in a level read,
    the first probe the log shows, `first_probe`: level_first) and only one is in force. An
    extend first affects the endpoint in force when it is declared (that read would have been
    final) and moves it later; several extends apply in turn. With the log's `clock`, a ledger
    amendment declared after the log had logged a probe at its first step or later is late too,
    and so is one whose first step or a later one the log shows a probe of without the time
    its format requires (the clock cannot show it was declared in time)."""
    spec = preset.verdict
    if spec.read == "delta":
        scale_first, what = spec.anchor_step, "the anchor probe"
    else:
        scale_first, what = level_first(preset, first_probe), "the first probe"
    endpoint = spec.endpoint_step
    checks = []
    scale_in_force = False
    for a in amendments:
        if a.kind == "delta":
            checks.append(_declared_delta(a))
            continue
        if a.kind == "extend":
            first, kind, where = endpoint, "an extend", "the endpoint in force"
        else:
            first, kind, where = scale_first, "a scale amendment", what
        when = declared_ts(a) if clock is not None else None
        reason = _refusal(_Claim(a, first, kind, where, clock, when, endpoint, scale_in_force))
        status = "refused" if reason else "applied"
        if not reason:
            reason = f"declared after step {a.declared_after_step} was seen, before step {first}"
            if a.kind == "extend":
                reason += f": the endpoint moves from {endpoint} to {a.to_step}"
                endpoint = a.to_step
            else:
                scale_in_force = True
        checks.append(
            AmendmentCheck(
                a.id, a.kind, a.source, a.declared_at, a.declared_after_step, first, status, reason
            )
        )
    return checks


def first_probe_seen(store: RunStore) -> int | None:
    """The step of the first probe the log shows, or None before any.

    A probe a resume superseded counts: it was seen."""
    return min([*store.probes, *(p.step for p in store.superseded)], default=None)


def level_first(preset: Preset, seen: int | None) -> int:
    """The first probe of a level read: the first the log shows (`seen`, first_probe_seen).

    A [source] preset's trainer probes where it does (its recipe's eval_every may be a default
    the preset never stated), and `probe_at_start` probes at step 0. Before any probe is seen,
    the step the preset expects the first at: 0 with probe_at_start, else its eval_every."""
    if seen is not None:
        return seen
    return 0 if preset.recipe.get("probe_at_start") else int(preset.recipe["eval_every"])


def endpoint_in_force(
    preset: Preset, amendments: Iterable[Amendment], checks: Iterable[AmendmentCheck]
) -> int:
    """The endpoint after the applied extends (the preset's own when none)."""
    endpoint = preset.verdict.endpoint_step
    for a, c in zip(amendments, checks, strict=True):
        if a.kind == "extend" and c.status == "applied":
            endpoint = a.to_step
    return endpoint


def applied_scales(
    amendments: Iterable[Amendment], checks: Iterable[AmendmentCheck]
) -> list[Amendment]:
    """The scale amendments applied, in the order declared (the first is the one in force)."""
    return [
        a
        for a, c in zip(amendments, checks, strict=True)
        if c.status == "applied" and a.kind == "scale"
    ]


def declared_deltas(amendments: Iterable[Amendment]) -> tuple[Mapping[str, object], ...]:
    """The deltas declared at launch, for verdict.json: key, ours, theirs and their record."""
    return tuple(
        {
            "amendment": a.id,
            "key": a.delta[0],
            "ours": _value(a.delta[1]),
            "theirs": _value(a.delta[2]),
            "comparator": a.comparator,
            "declared_at": a.declared_at,
        }
        for a in amendments
        if a.kind == "delta"
    )


def _value(text: str) -> object:
    """A value kept as JSON text, as its value (the text itself when it is not JSON)."""
    try:
        return json_loads(text)
    except ValueError:
        return text
