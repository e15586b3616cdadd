"""The console's calls into core.warnings (the launcher's rules), kept here so that an API
change there is a change in this one module."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fontaine_tui.core import warnings as rules

if TYPE_CHECKING:
    from fontaine_tui.screens.session import Session


def _inputs(session: Session, now: float) -> tuple[object, float | None, float]:
    process = session.process
    exit_info = process.poll() if process is not None else None  # type: ignore[attr-defined]
    launched = session.ledger.launched_at
    launched_ts = None
    if launched:
        from fontaine_tui.core.prereg import parse_utc

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
    """GPU-hours used, by the gate rule's own definition (launch to now, x GPUs held; None
    on CPU). The rule reports its numbers only past its warn fraction, so it is asked with
    that fraction at ~0: the header and the gate warning can never disagree."""
    exit_info, launched_ts, now = _inputs(session, now)
    store, preset = session.store, session.preset
    ctx = rules.context_for(store, preset, telemetry, launched_ts)
    gates = {**preset.gates, "gpu_hours_warn_frac": 1e-12}
    w = rules.gpu_hours(store, telemetry, gates, now, exit_info, ctx)
    return None if w is None else float(w.numbers["gpu_hours"])
