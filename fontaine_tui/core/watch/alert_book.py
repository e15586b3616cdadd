"""A run's warnings over time: the rules' context from its preset, and the book of sightings.

`evaluate` is the console's one call: the RunContext a preset gives (`context_for`), the
WarningBook's history of earlier snapshots, every rule once (core/watch/alerts.py), and each
warning with the time it was first seen.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from fontaine_tui.core.charts.envelope import banked_series
from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.preset.sections import world_size
from fontaine_tui.core.secrets import mask_text
from fontaine_tui.core.verdict.blindwords import rule_metrics
from fontaine_tui.core.watch.alerts import SEVERITIES, RunContext, RunWarning, run_rules
from fontaine_tui.core.watch.stall import HISTORY, RamReading, StateReading, state_key
from fontaine_tui.core.watch.traineralerts import trainer_warnings

if TYPE_CHECKING:
    from fontaine_tui.core.run.exits import ExitInfo

STICKY = ("first-poll",)  # a report: the first reading is kept, not recomputed


def context_for(
    store: RunStore,
    preset: Preset,
    telemetry: TelemetrySnapshot | None = None,
    launched_at: float | None = None,
) -> RunContext:
    """The RunContext the rules read a run with, including the GPUs it holds.

    The GPUs held are what the engine's own meta record says (device, world size). Before that
    record, they are the preset's platform, counted only where telemetry shows GPUs."""
    gpus = _gpus_held(store, preset, telemetry)
    spec = preset.verdict
    every, save_every = _cadences(preset)
    return RunContext(
        int(preset.recipe["steps"]),
        launched_at,
        gpus,
        banked_series(preset, False)[1],
        spec.metric,
        spec.anchor_step,
        spec.read,
        every,
        save_every,
        foreign=preset.foreign,
    )


def _gpus_held(store: RunStore, preset: Preset, telemetry: TelemetrySnapshot | None) -> int:
    """The GPUs the run holds.

    As its last meta record says (device, world size); before one, its preset's platform,
    counted only where telemetry shows GPUs."""
    if store.metas:
        meta = store.metas[-1]
        return (meta.world_size or 1) if meta.device.startswith("cuda") else 0
    if str(preset.platform["device"]) == "cpu" or telemetry is None or not telemetry.gpus:
        return 0
    return world_size(preset.platform)  # every node's GPUs count towards the gate


def _cadences(preset: Preset) -> tuple[int, int]:
    """(eval_every, save_every) of the run; 0 where none is known.

    A foreign run's probes come when its preset says, if it does; it has no checkpoints."""
    if preset.foreign:
        return (preset.stated_every[0] if preset.stated_every else 0), 0
    return int(preset.recipe.get("eval_every") or 0), int(preset.recipe.get("save_every") or 0)


def evaluate(
    book: WarningBook,
    store: RunStore,
    preset: Preset,
    telemetry: TelemetrySnapshot | None,
    now: float,
    process: ExitInfo | None = None,
    launched_at: float | None = None,
    finished: bool = False,
    settling: bool = False,
    blinded: bool = False,
    redact: Callable[[str], str] | None = None,
) -> list[RunWarning]:
    """The active warnings now, each with its first-seen time (the console's one call).

    The book records the snapshot first, so the rules see it in the history too. `finished`:
    the run's final read is in (a foreign run with no end event of its own is then over).
    `settling`: a foreign source's last step may still be held (RunContext). `blinded`: the
    rule's read is hidden (core/verdict/blind.py), so the envelope rule, which quotes it, is off,
    and a trainer's alert naming the rule's metric is shown without its words
    (core/watch/traineralerts.py); `redact` hides the
    notification secrets in its words (the secrets policy's mask_text without one)."""
    book.observe(telemetry)
    metrics = rule_metrics(preset.verdict, preset.labels)
    ctx = context_for(store, preset, telemetry, launched_at)
    ctx = replace(
        ctx,
        envelopes=() if blinded else ctx.envelopes,
        blinded=blinded,
        rule_metrics=metrics,
        ram_history=book.ram_history,
        state_history=book.state_history,
        finished=finished,
        settling=settling,
    )
    raised = trainer_warnings(store, metrics, blinded, now, redact or mask_text)
    return book.update(run_rules(store, telemetry, preset.gates, now, process, ctx) + raised)


class WarningBook:
    """Remembers when each active warning was first seen.

    A warning that clears and comes back is new. The book also keeps the last HISTORY snapshots'
    RAM readings and process states, one per distinct snapshot time, which a rule given one
    snapshot cannot see (the stall's trend)."""

    def __init__(self) -> None:
        self._active: dict[str, RunWarning] = {}
        self.last_new: list[RunWarning] = []  # new or changed severity at the last update
        self._ram: deque[RamReading] = deque(maxlen=HISTORY)
        self._states: deque[StateReading] = deque(maxlen=HISTORY)

    def observe(self, telemetry: TelemetrySnapshot | None) -> None:
        """Record a snapshot newer than the last one seen.

        The same or an older one is not a new poll (the console evaluates more often than it
        samples)."""
        if telemetry is None or (self._states and telemetry.time <= self._states[-1][0]):
            return
        self._states.append((telemetry.time, state_key(telemetry)))
        if telemetry.ram is not None:
            self._ram.append((telemetry.time, telemetry.ram.available, telemetry.ram.total))

    @property
    def ram_history(self) -> tuple[RamReading, ...]:
        return tuple(self._ram)

    @property
    def state_history(self) -> tuple[StateReading, ...]:
        return tuple(self._states)

    def update(self, warnings: list[RunWarning]) -> list[RunWarning]:
        """Return the warnings with `since` set to their first sighting."""
        now_active: dict[str, RunWarning] = {}
        for w in warnings:
            old = self._active.get(w.rule)
            if old is None:
                now_active[w.rule] = w
            elif w.rule in STICKY:
                now_active[w.rule] = old
            else:
                now_active[w.rule] = replace(w, since=old.since)
        for rule in STICKY:  # a report stays once made
            if rule in self._active and rule not in now_active:
                now_active[rule] = self._active[rule]
        new = [
            w
            for r, w in now_active.items()
            if r not in self._active or self._active[r].severity != w.severity
        ]
        self._active = now_active
        self.last_new = new
        return sorted(now_active.values(), key=lambda w: -SEVERITIES.index(w.severity))

    @property
    def active(self) -> list[RunWarning]:
        return list(self._active.values())
