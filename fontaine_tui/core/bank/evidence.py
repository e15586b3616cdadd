"""What in a run's own log contradicts itself, checked before the run is banked.

A comparator is banked from a run whose evidence holds together, or marked
(`bank add --even-if-conflicting`) so that no preset derives a bound from it. The run's own verdict
(UNDECIDABLE) is the verdict layer's to add."""

from __future__ import annotations

from fontaine_tui.core.log.store import RunStore

SHOWN = 3  # the first few places named of each kind


def _plural(n: int, word: str, many: str = "") -> str:
    return f"{n} {word if n == 1 else many or word + 's'}"


def _places(places: list[str], total: int) -> str:
    """'train_log.jsonl line 5, line 9, ...': a file named once, then only its lines."""
    shown, last_file = [], None
    for where in places[:SHOWN]:
        file, sep, line = where.rpartition(" line ")
        shown.append(f"line {line}" if sep and file == last_file else where)
        last_file = file if sep else None
    more = ", ..." if total > len(shown) else ""
    return ", ".join(shown) + more


def conflicts(store: RunStore) -> list[str]:
    """What in the log contradicts itself or was not applied, in words, one item each.

    The items are the steps with two different probes, the malformed lines, and the records not
    applied for going back (among them a probe logged after a later step's). An empty list means
    nothing was found."""
    out = [
        f"two different probes for step {c.step} ({store.where(c.first.line)} and "
        f"{store.where(c.second.line)})"
        for c in store.conflicts
    ]
    if store.malformed_count:
        where = [store.where(m.line) for m in store.malformed]
        out.append(
            f"{_plural(store.malformed_count, 'malformed line')} "
            f"({_places(where, store.malformed_count)})"
        )
    if store.out_of_order_count:
        where = [store.where(o.line) for o in store.out_of_order]
        out.append(
            f"{_plural(store.out_of_order_count, 'out-of-order record')} not applied "
            f"({_places(where, store.out_of_order_count)})"
        )
    return out
