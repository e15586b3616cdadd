"""The checking primitives every preset section is held to, and a preset's canonical form.

They are the spec tables' types, the one error a bad preset raises (file, key, what was
expected), and the canonical JSON a preset hashes."""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, TypeVar, cast

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.secrets import mask_text

# the verdict's classes (the verdict wing's rules.py computes them; [labels] and
# [interpretation] key on them)
HEALTHY = "HEALTHY"
SAME_DRIFT = "SAME-DRIFT"
AMBIGUOUS = "AMBIGUOUS"
BY_INSTRUMENT = "AMBIGUOUS-BY-INSTRUMENT"
UNDECIDABLE = "UNDECIDABLE"
LABELS = (HEALTHY, SAME_DRIFT, AMBIGUOUS, BY_INSTRUMENT, UNDECIDABLE)
ROUNDING = 0.5e-4 + 1e-12  # bounds are written to 4 decimals


class _Required(enum.Enum):
    REQUIRED = "required"


REQUIRED: Final = _Required.REQUIRED  # a sentinel mypy can narrow away (`default is REQUIRED`)


class PresetError(InputError):
    """A preset that cannot be used; str() is one line naming the file and the key."""

    def __init__(self, path: str | Path, key: str, expected: str) -> None:
        # what was expected often quotes the value found: shown as any text is (core/secrets.py)
        expected = mask_text(expected)
        self.path, self.key, self.expected = str(path), key, expected
        super().__init__(f"{path}: {key}: {expected}")


# A checked value: what a TOML (or canonical JSON) scalar becomes once held to its spec row.
Scalar = str | int | float | bool
# One row per key: (type, default). REQUIRED has no default.
Spec = dict[str, tuple[type | tuple[type, ...], Scalar | _Required]]
NUMBER = (int, float)
INT_MAX = 1 << 53  # steps, sizes, seeds: exact in a float, far past any run


def type_name(t: type | tuple[type, ...]) -> str:
    if t is NUMBER:
        return "a number"
    names: dict[type | tuple[type, ...], str] = {
        str: "a string",
        int: "an integer",
        bool: "true or false",
    }
    return names.get(t, str(t))


def check_keys(path: str | Path, where: str, table: object, keys: Iterable[str]) -> dict[str, Any]:
    """`table` if it is a table of only `keys`; else one `file: key: expected` line."""
    if not isinstance(table, dict):
        raise PresetError(path, where, "expected a table")
    known = list(keys)
    for key in table:
        if key not in known:
            raise PresetError(
                path, f"{where}.{key}", f"unknown key (expected one of: {', '.join(known)})"
            )
    return table


def check_section(path: Path, where: str, table: object, spec: Spec) -> dict[str, Scalar]:
    table = check_keys(path, where, table, spec)
    out: dict[str, Scalar] = {}
    for key, (typ, default) in spec.items():
        if key in table:
            out[key] = _value(path, where, key, typ, table[key])
        elif default is REQUIRED:
            raise PresetError(path, f"{where}.{key}", f"missing; expected {type_name(typ)}")
        else:
            out[key] = default
    return out


def _value(path: Path, where: str, key: str, typ: type | tuple[type, ...], value: Any) -> Scalar:
    """One key's value held to its spec row's type (a bool is no number); numbers finite.

    A number of [gates] (a limit or a duration) is >= 0; an integer is in [0, INT_MAX]."""
    ok = isinstance(value, typ) and not (isinstance(value, bool) and typ is not bool)
    if not ok:
        raise PresetError(
            path,
            f"{where}.{key}",
            f"expected {type_name(typ)}, got {json.dumps(value, default=str)}",
        )
    if typ is NUMBER:
        return _finite(path, where, key, value)
    if typ is int and not 0 <= value <= INT_MAX:
        raise PresetError(
            path, f"{where}.{key}", f"expected an integer in [0, {INT_MAX}], got {value}"
        )
    return value


def _finite(path: Path, where: str, key: str, value: int | float) -> float:
    """A number key's value as a float: finite, and >= 0 in [gates]."""
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise PresetError(path, f"{where}.{key}", f"expected a finite number, got {number}")
    if where == "gates" and number < 0:
        raise PresetError(
            path,
            f"{where}.{key}",
            f"expected a number >= 0 (a limit or a duration), got {number:g}",
        )
    return number


def choice(path: Path, key: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise PresetError(path, key, f"expected one of {', '.join(choices)}, got {value!r}")


def positive(path: Path, key: str, value: int, minimum: int = 1) -> None:
    if value < minimum:
        raise PresetError(path, key, f"expected an integer >= {minimum}, got {value}")


def set_only(table: Mapping[str, object]) -> dict[str, object]:
    """Drop unset numbers (NaN, infinity) so the canonical form is strict JSON."""
    return {k: v for k, v in table.items() if not (isinstance(v, float) and not math.isfinite(v))}


def canonical_bytes(data: Mapping[str, object]) -> bytes:
    """Sorted keys, no spaces, floats as Python writes them: the form that is hashed."""
    return json.dumps(dict(data), sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


_T = TypeVar("_T")


def made(cls: type[_T], fields: Mapping[str, Scalar], **more: object) -> _T:
    """Build a section's dataclass from what check_section returned.

    Each value already has its spec row's type, which mypy cannot follow from the Spec tables
    (hence the one cast)."""
    return cls(**more, **cast(dict[str, Any], fields))
