"""The console's calls into core.warnings (the launcher's rules), kept here so that an API
change there is a change in this one module."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fontaine_tui.core.launch import alerts as rules

if TYPE_CHECKING:
    from fontaine_tui.model.session import Session


def _inputs(session: Session, now: float) -> tuple[object, float | None, float]:
    process = session.process
    exit_info = process.poll() if process is not None else None  # type: ignore[attr-defined]
    launched = session.ledger.launched_at
    launched_ts = None
    if launched:
        from fontaine_tui.core.verdict.prereg import parse_utc

        try:
            launched_ts = parse_utc(launched)
        except ValueError:
            launched_ts = None
    if session.kind == "replay" and session.store.steps:
        now = session.store.columns["time"][-1]  # a replay's "now" is the log's own clock
    return exit_info, launched_ts, now


def evaluate(session: Session, telemetry: object, now: float) -> tuple[object, ...]:
    """The active warnings, each with the time it was first seen."""
    book = getattr(session, "warning_book", None)
    if book is None:
        book = session.warning_book = rules.WarningBook()
    exit_info, launched_ts, now = _inputs(session, now)
    return tuple(rules.evaluate(book, session.store, session.preset, telemetry, now,
                                exit_info, launched_ts))


def gpu_hours(session: Session, telemetry: object, now: float) -> float | None:
    """GPU-hours used, by the same definition the gate rule uses (None on CPU)."""
    exit_info, launched_ts, now = _inputs(session, now)
    ctx = rules.context_for(session.store, session.preset, telemetry, launched_ts)
    return rules.gpu_hours_used(session.store, now, exit_info, ctx)
