"""What the model hands the screens: a run at one moment (RunView), what an action did (Outcome).

That is a run at one moment (`RunView`) and what an action did (`Outcome`).

A `Session` (model/session.py) builds them; screens and widgets only read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from fontaine_tui.core.launch.rescore import ScoreOffer, ScoreState
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run.attempts import Attempt
from fontaine_tui.core.verdict.record import Verdict
from fontaine_tui.core.verdict.seen import SeenReads
from fontaine_tui.core.watch import alerts
from fontaine_tui.model import readout
from fontaine_tui.model.ledger import Ledger


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an action did, as one line for the user; severity as Textual's notify takes it."""

    message: str
    severity: str = "information"  # "information" | "warning" | "error"


@dataclass(frozen=True, slots=True, eq=False)
class RunView:
    """Everything a screen shows at one moment; rebuilt at most a few times a second."""

    version: int
    name: str
    label: str
    preset: Preset
    status: str
    store: RunStore
    progress: readout.Progress
    verdicts: tuple[Verdict, ...]
    latest: Verdict
    rows: tuple[readout.ProbeRow, ...]
    ledger: Ledger
    warnings: tuple[alerts.RunWarning, ...]
    note: str
    status_tone: str = "watching"  # readout.status_tone: how the header colours the status
    # the disambiguating re-score of an AMBIGUOUS-BY-INSTRUMENT run (core/launch/rescore.py)
    score_offer: ScoreOffer | None = None
    score_state: ScoreState | None = None
    attempts: tuple[Attempt, ...] = ()  # launches and resumes, oldest first (attempts.jsonl)
    # the read is hidden (core/verdict/blind.py): `verdicts` and `rows` are empty, and no
    # screen shows `latest`'s label, values or deltas, nor the rule's probes
    blinded: bool = False
    # the probes and reads a chart draws (the evidence gate's `seen_reads`): none while
    # `blinded`, and none where a view was built without them
    seen: SeenReads = SeenReads(MappingProxyType({}), (), True)
    # what a launched engine says it does before its first record (engine/status.py)
    engine_status: str = ""

    def verdict_at(self, step: int | None) -> Verdict:
        """The read at a probe step; the latest read when `step` is None or not a probe."""
        if step is not None:
            for v in self.verdicts:
                if v.read_step == step:
                    return v
        return self.latest


def blind_note(v: Verdict) -> str:
    """What a screen shows in place of a blinded read."""
    at = f"step {v.read_step}" if v.read_step is not None else "no probe yet"
    return (
        f"BLINDED: the rule's values, deltas and verdict stay hidden until the endpoint (step "
        f"{v.endpoint_step}); latest probe {at}. u unblinds (recorded in review.jsonl with who "
        "and why)"
    )


def step_read(view: RunView, current: int | None, delta: int) -> int | None:
    """The probe step `delta` reads away from `current` (None: the latest), clamped."""
    steps = [v.read_step for v in view.verdicts if v.read_step is not None]
    if not steps:
        return None
    here = current if current in steps else view.latest.read_step
    i = steps.index(here) if here in steps else len(steps) - 1
    return steps[max(0, min(len(steps) - 1, i + delta))]
