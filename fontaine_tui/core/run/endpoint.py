"""The endpoint a resumed run trains to: the pre-registered one, moved by the applied extends.

The run folder's prereg.json and amendments.jsonl are read as `fontaine-tui verdict` reads them
(the frozen preset, the hash chain, check_amendments), so a resume trains to the step the
verdict waits for. A broken chain is one line: no endpoint can be trusted from it.
A run that finished at the endpoint in force has nothing to resume (`nothing_to_resume`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run.attempts import read_attempts
from fontaine_tui.core.run.logtail import read_tail
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict.amendments import check_amendments, endpoint_in_force
from fontaine_tui.core.verdict.ledger import read_amendments
from fontaine_tui.core.verdict.prereg import read_prereg


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the verdict reads a run: as pre-registered, and after the applied extends."""

    registered: int  # the frozen preset's verdict.endpoint_step
    in_force: int  # after the extends check_amendments applies
    ledger: str  # amendments.jsonl, as the refusals name it

    @property
    def extended(self) -> bool:
        return self.in_force > self.registered


def planned_steps(preset: Preset, in_force: int | None = None) -> int:
    """The steps the run trains to, with the endpoint `in_force` (the verdict's endpoint_step).

    recipe.steps (0 when absent), or the endpoint in force where applied extends moved it past
    them, as a resume trains (engine_argv's --extend-to). None: not read yet."""
    steps = preset.recipe.get("steps", 0)
    planned = int(steps) if isinstance(steps, (int, float)) and math.isfinite(steps) else 0
    if in_force is not None and in_force > preset.verdict.endpoint_step:
        return max(planned, in_force)
    return planned


def resume_endpoint(folder: RunFolder) -> Endpoint:
    """The endpoint in force for a resume of the run in `folder`.

    InputError (one line) when prereg.json cannot be read or the amendment chain is broken."""
    frozen = read_prereg(folder).frozen_preset(str(folder.prereg))
    try:
        ledger = read_amendments(folder)
    except InputError as exc:
        raise InputError(
            f"--resume: {exc}; the endpoint in force cannot be read from a broken chain, "
            "so the run is not resumed"
        ) from None
    every = [*frozen.amendments, *ledger]
    checks = check_amendments(every, frozen)
    return Endpoint(
        frozen.verdict.endpoint_step,
        endpoint_in_force(frozen, every, checks),
        literal(str(folder.amendments)),
    )


def nothing_to_resume(folder: RunFolder) -> str:
    """How the run finished, when a resume has nothing left to train ("" when it has).

    Its last attempt finished (attempts.jsonl), or, with no attempt recorded, its log ends
    with the engine's `end` event of a finished run; or, however it ended, the endpoint in
    force is probed already (`_probed`): its read is final, and a resume would only train
    past it. A stop, a kill or a crash before that leaves it to resume, and so does an
    applied `amend --extend-to` that moved the endpoint in force past the step it finished
    at (the resume trains on to it)."""
    try:
        endpoint = resume_endpoint(folder)
    except InputError:
        return ""  # a broken chain: the launch refuses it in its own words
    finished = _finished(folder)
    if finished is not None:
        step, how = finished
        if not endpoint.extended or (step is not None and step >= endpoint.in_force):
            return f"{how}, and the endpoint in force is step {endpoint.in_force}"
    if _probed(folder, endpoint.in_force):
        return (
            f"the endpoint in force, step {endpoint.in_force}, is probed already "
            f"({_last_end(folder)}): its read is final"
        )
    return ""


def _probed(folder: RunFolder, step: int) -> bool:
    """Whether the run's log holds a probe of its verdict's metric at or past `step`.

    Read as its frozen preset reads it: the engine's log, or a [command]'s [source]. A log that
    cannot be read holds none (the launch says what is wrong with it in its own words)."""
    from fontaine_tui.core.log.formats.cold import load_source
    from fontaine_tui.core.log.read import load_log
    from fontaine_tui.core.run.evidence import probed_at

    try:
        preset = read_prereg(folder).frozen_preset(str(folder.prereg))
        spec = preset.source
        if spec is None or spec.kind == "fontaine":
            store = load_log(folder.log, columns=False, history=True)
        else:
            store = load_source(folder.root, spec).store
    except (InputError, OSError):
        return False
    return probed_at(store, preset.verdict.metric, step)


def _last_end(folder: RunFolder) -> str:
    """How its last attempt ended, in words ("its log" when none is recorded)."""
    ran = read_attempts(folder)
    if not ran:
        return "its log"
    last = ran[-1]
    step = f" at step {last.last_step}" if last.last_step is not None else ""
    return f"attempt {last.number} {last.cause}{step}"


def _finished(folder: RunFolder) -> tuple[int | None, str] | None:
    """(the step it finished at, how it says so) of a finished run, else None.

    Its last attempt's cause, or, with no attempt recorded, its log's `end` event."""
    ran = read_attempts(folder)
    if ran:
        last = ran[-1]
        if last.cause != "finished":
            return None
        step = last.last_step
        return step, f"attempt {last.number} finished" + (
            f" at step {step}" if step is not None else ""
        )
    tail = read_tail(folder)
    if tail.last_event != "end" or not tail.detail.startswith("finished"):
        return None
    return tail.last_step, f"its log ends: {literal(tail.detail)}"
