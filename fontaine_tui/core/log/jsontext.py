"""JSON text as trainers write it: NaN and Infinity, big integers, a key named twice.

This covers NaN and Infinity tokens (Python's `json.dumps` default), integers past 64 bits, and
objects that name one key twice.

A key written twice is two values for one thing: JSON parsers keep the last silently, so a
reader that cares asks `readings` for both (the first occurrence's reading and the last's),
and treats two different readings as conflicting evidence.
"""

from __future__ import annotations

import json
import re

from fontaine_tui.core.limits import json_loads

_KEY = re.compile(rb'"\s*:')  # at least one per key written (a string may hold more)


def loads(raw: bytes | str) -> object:
    """One JSON text; ValueError with a short reason when it cannot be read.

    Read by core/limits.py: nested at most JSON_DEPTH levels."""
    return json_loads(raw)


def _keys(obj: object) -> int:
    """How many keys the parsed text holds, at every depth."""
    if isinstance(obj, dict):
        return len(obj) + sum(_keys(v) for v in obj.values() if isinstance(v, (dict, list)))
    if isinstance(obj, list):
        return sum(_keys(v) for v in obj if isinstance(v, (dict, list)))
    return 0


def _first_wins(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        out.setdefault(key, value)
    return out


def readings(raw: bytes | str, obj: object) -> list[object]:
    """`obj` alone, or with the first occurrence's reading of a repeated key before it.

    `obj` is the text parsed, with the last value of a repeated key kept. When the text names a
    key twice with different values, the first occurrence's reading comes before it."""
    text = raw.encode() if isinstance(raw, str) else raw
    if len(_KEY.findall(text)) <= _keys(obj):
        return [obj]  # no key written twice (every key text found a key in the object)
    try:
        first = json.loads(text, object_pairs_hook=_first_wins)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return [obj]
    return [obj] if repr(first) == repr(obj) else [first, obj]
