"""The bank wing: finished runs kept as comparators.

`store.py` keeps them by name and sha256, so a preset can compare a run with whole banked curves
rather than numbers typed in."""

from __future__ import annotations

from fontaine_tui.core.bank.store import Entry, bank_dir, document, entries, get, put

__all__ = ["Entry", "bank_dir", "document", "entries", "get", "put"]
