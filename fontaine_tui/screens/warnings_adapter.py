"""The console's one call into core.warnings (the launcher's rules), kept here so that an
API change there is a change in one function."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fontaine_tui.screens.session import Session


def evaluate(session: Session, telemetry: object, now: float) -> tuple[object, ...]:
    try:
        from fontaine_tui.core import warnings as rules
    except ImportError:
        return ()
    book = getattr(session, "_warning_book", None)
    if book is None and hasattr(rules, "WarningBook"):
        book = rules.WarningBook()
        session._warning_book = book  # type: ignore[attr-defined]
    if book is None or not hasattr(rules, "evaluate"):
        return ()
    return tuple(rules.evaluate(book, session.store, session.preset, telemetry, now))
