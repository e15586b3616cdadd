"""When the last step a foreign decoder read goes out: once its source shows it complete.

A step's values may come in more than one write, so the last step read is held; it goes out
at once when the source shows it is complete (a later step, an MLflow run's end), else at
the first look that finds the source as it was (one quiet poll). A value its writer logs for
it after that completes its probe (never a conflict).
"""

from __future__ import annotations

from fontaine_tui.core.log.formats.base import Decoder, Whole, groupers
from fontaine_tui.core.log.records import Record


def settle(dec: Decoder) -> list[Record]:
    """The records due at the source's current end.

    The held step's train record goes out at once (the loss chart need not wait for the next
    step). Its eval values wait for the next step, or a quiet poll, since a writer may log a
    step's values in more than one write."""
    if isinstance(dec, Whole):
        return dec.settle_train()
    out: list[Record] = []
    for grouper in groupers(dec):
        grouper.settle_train(out)
    return out


def quiet(dec: Decoder) -> list[Record]:
    """The held step whole, once the source did not change for one poll.

    A value its writer logs for it later completes its probe (Grouper, RunStore: never a
    conflict)."""
    if isinstance(dec, Whole):
        return dec.settle()
    out: list[Record] = []
    for grouper in groupers(dec):
        grouper.flush(out)
    return out


class Quiet:
    """The held step's release for a source read whole again and again.

    Such a source is trainer_state.json or an MLflow store. After a read that changed, the held
    step's train record goes out at once. At the first read after it that found the source as it
    was, the held step goes out whole."""

    def __init__(self) -> None:
        self.seen: object = _NOTHING
        self.settled = True

    def after(self, dec: Decoder, records: list[Record], seen: object) -> list[Record]:
        if seen != self.seen:
            self.seen, self.settled = seen, False
            return records + settle(dec)
        if not self.settled:
            self.settled = True
            return records + quiet(dec)
        return records


_NOTHING = object()  # read nothing yet
