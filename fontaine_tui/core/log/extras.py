"""The train records' numbers beyond the store's columns, one sparse series per key.

A run logs what it likes beside its loss (a learning rate per parameter group, a dataset's
metric, a system counter). Each such key is kept as two columns, the steps that logged it and
its values, so a key logged at a few steps costs only those steps, and a step that did not log
it holds nothing (never a number it did not log). NaN and the infinities are kept as logged.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Mapping

KEYS_KEPT = 4096  # distinct keys kept (a runaway log is not held whole); the rest are counted


class ExtraSeries:
    """The extra keys of a store's train records, each its steps and values, in step order."""

    def __init__(self) -> None:
        self._cols: dict[str, tuple[array, array]] = {}
        self.dropped_keys = 0  # keys not kept once KEYS_KEPT were

    def add(self, step: int, values: Mapping[str, float]) -> None:
        """Append one train record's extra values at `step` (after every step held)."""
        cols = self._cols
        for key, value in values.items():
            col = cols.get(key)
            if col is None:
                if len(cols) >= KEYS_KEPT:
                    self.dropped_keys += 1
                    continue
                col = cols[key] = (array("q"), array("d"))
            col[0].append(step)
            col[1].append(value)

    def extend(self, key: str, steps: array, values: array) -> None:
        """Take a whole column of `key` at once (a cold read).

        Its steps go forward from the last held; a step logged twice keeps its first value."""
        cols = self._cols
        if key not in cols and len(cols) >= KEYS_KEPT:
            self.dropped_keys += 1
            return
        held_steps, held_values = cols.setdefault(key, (array("q"), array("d")))
        if all(a < b for a, b in zip(steps, steps[1:], strict=False)) and (
            not held_steps or not steps or steps[0] > held_steps[-1]
        ):
            held_steps.extend(steps)
            held_values.extend(values)
            return
        for step, value in sorted(zip(steps, values, strict=True), key=lambda sv: sv[0]):
            if not held_steps or step > held_steps[-1]:
                held_steps.append(step)
                held_values.append(value)

    def cut(self, step: int) -> None:
        """Drop every value logged after `step` (a resume went back to it)."""
        for steps, values in self._cols.values():
            if steps and steps[-1] > step:
                i = bisect_left(steps, step + 1)
                del steps[i:]
                del values[i:]

    def at(self, step: int) -> dict[str, float]:
        """The values logged at `step`, by key."""
        out = {}
        for key, (steps, values) in self._cols.items():
            i = bisect_left(steps, step)
            if i < len(steps) and steps[i] == step:
                out[key] = values[i]
        return out

    def names(self) -> list[str]:
        """The keys that hold at least one value, in the order first logged."""
        return [k for k, (steps, _) in self._cols.items() if steps]

    def series(self, key: str) -> tuple[array, array] | None:
        """The steps and values of `key` (the store's own arrays: do not change them)."""
        return self._cols.get(key)
