"""A run's verdict composed one way: the gate every surface that says a read goes through.

A read depends on more than the log. The run folder holds the amendments declared in its
ledger (each checked on the log's own clock), the provenance frozen in prereg.json, the stop
a `[gates] stop_on_lock` gate recorded in attempts.jsonl, the review trail (a recorded
unblinding) and the restarts `[recovery]` made. `FolderEvidence` is what a folder holds of them,
read once (`of_folder` here, `of_files` from the bytes a remote host sent), and `verdict_of`
is the one composition of the rules (core/verdict/rules.py) with them: `fontaine-tui verdict`,
seal and verify, the plain reports, the console's session, the runs list, bank and amend all
read a run through it, so no surface can leave out one of them. An import-linter contract
(pyproject.toml) keeps every other module of the surfaces from importing the rules directly.
The blind is the verdict's own (core/verdict/blind.py's `hidden`): a surface asks it of the
verdict this gives before it shows a read. The gate says in the verdict (`withheld`) when a read
that is not PROVISIONAL is still not final for the blind: a run ended before its endpoint, or a
ledger that does not hold (it may have dropped an amendment that moved the endpoint).

The probes' values reach a surface only through `seen_probes` (a chart's, with the reads at
them, through `seen_reads`), the conflicting probes' through `seen_conflicts` and another
trainer's eval values that are not numbers through `seen_odd_values`, which withhold them all
while the read is hidden; a second contract (scripts/contracts.py) keeps every other module of
the surfaces, and the charts, from reading the store's `probes`, `superseded`, `conflicts` or
`odd_values`. What carries no value (where the probes stand, when they were written, what they
logged, how many conflict) the store says itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.records import Probe
from fontaine_tui.core.log.store import Conflict, RunStore
from fontaine_tui.core.preset.record import Amendment, Preset
from fontaine_tui.core.run.attempts import Attempt, attempts_from, read_attempts
from fontaine_tui.core.run.exits import GATE_STOPS
from fontaine_tui.core.run.recovery import recovery_read
from fontaine_tui.core.runfolder import PREREG, RunFolder
from fontaine_tui.core.verdict import review
from fontaine_tui.core.verdict.amendments import LogClock
from fontaine_tui.core.verdict.head import head_path
from fontaine_tui.core.verdict.ledger import (
    LedgerRead,
    genesis,
    parse_ledger,
    read_ledger,
)
from fontaine_tui.core.verdict.record import AmendmentCheck, ReviewState, Verdict
from fontaine_tui.core.verdict.review import TrailFiles
from fontaine_tui.core.verdict.rules import (
    compute_verdict,
    conflict_reason,
    log_clock,
    verdict_series,
)
from fontaine_tui.core.verdict.seen import SeenReads

__all__ = [
    "READ_SHOWN",
    "FolderEvidence",
    "conflict_in_words",
    "gate_end",
    "gate_stopped",
    "ledger_refusal",
    "log_clock",
    "seen_conflicts",
    "seen_odd_values",
    "seen_probes",
    "seen_reads",
    "trail_refusal",
    "unknown_blind",
    "verdict_of",
    "verdicts_of",
    "withheld",
]


@dataclass(frozen=True, slots=True)
class FolderEvidence:
    """What a run folder holds beside its log that its read depends on.

    `attempts` is None for a log without a run folder (no attempts, no [recovery] read);
    `checks` replaces the verdict's amendment checks when `amendments` is a shortened list
    that reads the same (the console's, for a ledger of thousands); `ledger_error` is a break
    in the ledger's chain, the amendments before it kept (said where the surface says it)."""

    amendments: tuple[Amendment, ...] = ()
    provenance: Mapping[str, object] | None = None
    attempts: tuple[Attempt, ...] | None = None
    review: ReviewState | None = None
    checks: tuple[AmendmentCheck, ...] | None = None
    ledger_error: str = ""

    @classmethod
    def of_folder(
        cls,
        folder: RunFolder | None,
        provenance: Mapping[str, object] | None = None,
        *,
        strict: bool = True,
        review_of: str | None = None,
    ) -> FolderEvidence:
        """The context a run folder holds (none for `folder` None).

        With `strict`, a broken ledger raises InputError naming its line (`ledger_refusal`,
        as `verdict` refuses); otherwise the amendments before the break count and the break
        is kept in `ledger_error`. `review_of`: the folder whose review trail is read (the
        log's folder when there is no run folder). With `strict`, a review trail that does not
        hold in a folder without its prereg.json raises too (`unknown_blind`), before any read."""
        where = review_of if review_of is not None else None if folder is None else folder.root
        trail = review.state(where) if where is not None else None
        if strict and where is not None:
            beside = Path(where) / PREREG
            if refused := unknown_blind(trail, str(beside), beside.exists()):
                raise InputError(refused)
        if folder is None:
            return cls(provenance=provenance, review=trail)
        amendments, error = _folder_ledger(folder, strict)
        return cls(amendments, provenance, tuple(read_attempts(folder)), trail, None, error)

    @classmethod
    def of_files(
        cls,
        prereg: bytes | None,
        provenance: Mapping[str, object] | None,
        amendments: bytes | None,
        head: bytes | None,
        attempts: bytes | None,
        where: str,
        *,
        strict: bool = False,
        trail: TrailFiles | None = None,
    ) -> FolderEvidence:
        """The context from a run folder's files as bytes (read on another host).

        The ledger is held to its chain from these prereg.json bytes; a break keeps the
        amendments before it, said in `ledger_error`, or with `strict` raises InputError
        naming its line (`ledger_refusal`, as `of_folder`). `trail`: the folder's review trail
        and the files it is held to, as read there (None: not read), checked as `of_folder`
        checks it here (core/verdict/review.py's `state_of`), `strict` refusing as there."""
        state = None if trail is None else review.state_of(trail)
        if strict and trail is not None:
            beside = f"{where}/{PREREG}"
            if refused := unknown_blind(state, beside, trail.prereg is not None):
                raise InputError(refused)
        declared, error = _bytes_ledger(prereg, amendments, head, where, strict)
        ran = tuple(attempts_from(attempts, alive=lambda _pid, _started: False)) if attempts else ()
        return cls(declared, provenance, ran, state, None, error)


def _folder_ledger(folder: RunFolder, strict: bool) -> tuple[tuple[Amendment, ...], str]:
    """The amendments of the folder's ledger and its break ("" when none, or no ledger)."""
    if not (folder.amendments.exists() or head_path(folder.amendments).exists()):
        return (), ""
    return _held(read_ledger(folder), strict)


def _bytes_ledger(
    prereg: bytes | None, amendments: bytes | None, head: bytes | None, where: str, strict: bool
) -> tuple[tuple[Amendment, ...], str]:
    """As `_folder_ledger`, from the ledger's bytes held to the chain of these prereg.json's."""
    if not (amendments or head):
        return (), ""
    origin, start = f"{where}/amendments.jsonl", genesis(prereg)
    return _held(parse_ledger(amendments or b"", origin, start, head), strict)


def _held(read: LedgerRead, strict: bool) -> tuple[tuple[Amendment, ...], str]:
    """A ledger read's amendments and its break.

    With `strict`, a break raises InputError naming its line (`ledger_refusal`)."""
    if strict and (refused := ledger_refusal(read.broken)):
        raise InputError(refused)
    return tuple(read.amendments), read.broken


NO_CONTEXT = FolderEvidence()


_NONE_SEEN: Mapping[int, Probe] = MappingProxyType({})


def seen_probes(store: RunStore, hidden: bool) -> Mapping[int, Probe]:
    """The run's probes as a surface may show them (step -> probe): none while `hidden`.

    `hidden` is the blind's word on the read the surface shows (core/verdict/blind.py's
    `hidden`, the session's `hides`), or, with no read yet, whether the preset or the viewer
    blinds the run. A read-only view: no surface changes the evidence."""
    return _NONE_SEEN if hidden else MappingProxyType(store.probes)


def probed_at(store: RunStore, metric: str, step: int) -> bool:
    """Whether the run holds a probe of `metric` at or past `step` (its values unread).

    That is whether its read at that endpoint is final: no value is shown, so no blind
    hides it (a resume that would only train past it is refused: core/run/endpoint.py)."""
    return any(p.step >= step and metric in p.fields for p in store.probes.values())


def seen_reads(store: RunStore, verdicts: Sequence[Verdict], hidden: bool) -> SeenReads:
    """The run's probes and its read at each (`verdicts`) as a chart may draw them.

    While `hidden` (as for `seen_probes`) it holds neither: the charts (core/charts/
    probes.py, overlay.py) draw from this alone, so none can show a hidden read."""
    if hidden:
        return SeenReads(_NONE_SEEN, (), True)
    return SeenReads(MappingProxyType(store.probes), tuple(verdicts), False)


def seen_conflicts(store: RunStore, hidden: bool) -> tuple[Conflict, ...]:
    """The store's conflicting probe pairs as a surface may show them: none while `hidden`.

    A conflict holds both probes, values and all, and its step is where a read is UNDECIDABLE.
    While the read is hidden a surface counts them (`store.counts()["conflicts"]`), as the
    verdict's blinded card does, and names neither their steps nor their values."""
    return () if hidden else tuple(store.conflicts)


def seen_odd_values(store: RunStore, hidden: bool) -> str:
    """Another trainer's eval values that are not numbers, in words ("" when none).

    Which key held one, at which step and what it was is a probe's value, and a read at that
    step is UNDECIDABLE: while `hidden` they are counted, naming no key, step or value, as the
    conflicting probes are (core/log/oddvalues.py words both, the verdict's card so too)."""
    return store.odd_values.words(hidden)


def gate_stopped(attempts: Sequence[Attempt] | None) -> int | None:
    """The step a stop_on_lock gate stopped the run at, when its last attempt ended so.

    attempts.jsonl, which this program alone writes, says it: a run another trainer logs may
    never log its end."""
    last = attempts[-1] if attempts else None
    return last.last_step if last is not None and last.cause in GATE_STOPS else None


def gate_end(store: RunStore, ctx: FolderEvidence, stopped_at: int | None = None) -> int | None:
    """The step a stop_on_lock gate ended the run at, once its log reached it (else None).

    `stopped_at`: the step a watcher's gate stopped the run at, before attempts.jsonl says it
    (else attempts.jsonl's, `gate_stopped`). The verdict reads the run as ended there, and
    `bank add` takes it as the run's end: the log itself may never say it."""
    ended = stopped_at if stopped_at is not None else gate_stopped(ctx.attempts)
    if ended is not None and store.last_step < ended:
        return None  # a replay, or a follower catching up, has not reached the stop yet
    return ended


# what a refusal after a shown read adds: the read shown is still the evidence's
READ_SHOWN = "the verdict above is the evidence's"


def ledger_refusal(broken: str) -> str:
    """A broken ledger in one line naming its file and line ("" when its chain holds).

    `broken` is the break as core/verdict/ledger.py's read says it (`LedgerRead.broken`,
    `FolderEvidence.ledger_error`). Each surface that says a read refuses it so (exit 2):
    `verdict`, `bank add` and `amend` before the read (`FolderEvidence`'s strict read), the
    plain reports (`replay --plain`, `attach --plain`) after the reads they showed, which
    counted the amendments before the break."""
    return broken


def unknown_blind(trail: ReviewState | None, prereg: str, present: bool) -> str:
    """A review trail that does not hold beside no prereg.json, in one line ("" otherwise).

    The trail's chain starts at prereg.json, and prereg.json is what says a run is blinded:
    with it gone and the trail broken, the folder may be a blinded run's whose blind went with
    it. `verdict` (and `bank add`, `amend`) refuse it before any read is shown, whatever preset
    is given (`-p`), as they refuse a broken ledger. `prereg` names the folder's prereg.json,
    here or on another host, and `present` says whether it is there."""
    if trail is None or trail.intact or present:
        return ""
    return trail_refusal(
        trail,
        f"{prereg}, which says whether the read is blinded, is gone: nothing is shown",
    )


def trail_refusal(trail: ReviewState | None, then: str = "") -> str:
    """A review trail that does not hold, in one line naming its file ("" when it holds).

    Each surface that says a read refuses it so (exit 2): `verdict` and the plain reports
    (`replay --plain`, `attach --plain`) after the read, which is the evidence's (`then`:
    READ_SHOWN; nothing after a blinded read), and `bank add` before anything is banked;
    `then` says which."""
    if trail is None or trail.intact:
        return ""
    return f"{trail.broken} (the review trail does not hold{'; ' + then if then else ''})"


def verdict_of(
    store: RunStore,
    preset: Preset,
    ctx: FolderEvidence = NO_CONTEXT,
    at_step: int | None = None,
    clock: LogClock | None = None,
    stopped_at: int | None = None,
) -> Verdict:
    """The verdict of `store` by `preset` in its run folder's context: the one composition.

    `clock`: the log's own clock when the caller keeps it (else the store's). `stopped_at`:
    the step a watcher's gate stopped the run at, before attempts.jsonl says it."""
    ended = gate_end(store, ctx, stopped_at)
    v = compute_verdict(store, preset, at_step, ctx.amendments, ctx.provenance, ended, clock)
    return replace(
        v,
        amendments=v.amendments if ctx.checks is None else ctx.checks,
        review=ctx.review,
        recovery=None if ctx.attempts is None else recovery_read(preset.recovery, ctx.attempts),
        withheld=withheld(store, v, ctx, ended),
    )


LEDGER_WITHHELD = (
    "the amendment ledger does not hold, so the endpoint in force is not known: the read is "
    "hidden until it holds"
)


def withheld(store: RunStore, v: Verdict, ctx: FolderEvidence, ended: int | None = None) -> str:
    """Why the blind holds the read `v` though it is not PROVISIONAL ("" when it does not).

    A broken ledger (`ctx.ledger_error`) may have dropped an amendment that moved the endpoint
    later: the read at the endpoint before it is not known to be final. A run that ended
    (its log's `end`, else `ended`, a gate's stop) before its endpoint, without a locked
    decision read before it (core/verdict/stopped.py's `settle`), never reaches the read the
    blind waits for: it stays hidden until a recorded look, or until the run is resumed and
    reaches its endpoint (a resume clears the log's end)."""
    if ctx.ledger_error:
        return LEDGER_WITHHELD
    end = store.ended_at if store.ended_at is not None else ended
    if v.provisional or end is None:
        return ""
    endpoint = v.endpoint_step
    if endpoint in store.probes or store.last_step >= endpoint:
        return ""
    if v.read_step is not None and v.read_step < endpoint:  # the decision locked before it
        return ""
    return (
        f"the run ended at step {end}, before its endpoint (step {endpoint}): the read is hidden "
        "until a recorded look"
    )


def verdicts_of(store: RunStore, preset: Preset, ctx: FolderEvidence = NO_CONTEXT) -> list[Verdict]:
    """The verdict as it read at each probe step, in the same context ("what did it say at 750?")."""
    return [
        replace(
            v,
            amendments=v.amendments if ctx.checks is None else ctx.checks,
            review=ctx.review,
            withheld=LEDGER_WITHHELD if ctx.ledger_error else "",
        )
        for v in verdict_series(store, preset, ctx.amendments, ctx.provenance)
    ]


def conflict_in_words(store: RunStore, conflict: Conflict, metric: str) -> str:
    """Two probes for one step without a resume between them, as the verdict says it."""
    return conflict_reason(store, conflict, metric)
