"""The train records' numbers beyond the store's columns, one sparse series per key.

A run logs what it likes beside its loss (a learning rate per parameter group, a dataset's
metric, a system counter). Each such key is kept as two columns, the steps that logged it and
its values, so a key logged at a few steps costs only those steps, and a step that did not log
it holds nothing (never a number it did not log). NaN and the infinities are kept as logged.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Mapping, Sequence

from fontaine_tui.core.log.records import CUT_NAMED

KEYS_KEPT = 4096  # distinct keys kept (a runaway log is not held whole); the rest are counted
NOT_KEPT_COUNTED = 65536  # distinct keys not kept, counted one by one; past it: "at least"


class _Column:
    """One key's values, and its steps where they are not a run of the shared rows."""

    __slots__ = ("start", "steps", "values")

    def __init__(self, start: int, steps: array | None = None) -> None:
        self.start = start  # with no steps of its own: its values are at rows[start:]
        self.steps = steps
        self.values = array("d")


class ExtraSeries:
    """The extra keys of a store's train records, each its steps and values, in step order.

    The steps of every record given are kept once (`rows`). A key logged by each record since
    its first (the usual case: a trainer logs the same keys every step) holds only its values,
    its steps being a run of those rows; a key that skipped a record gets its own steps."""

    def __init__(self) -> None:
        self._rows = array("q")
        self._cols: dict[str, _Column] = {}
        self._not_kept: set[int] = set()  # hashes of the distinct keys not kept
        self._more_not_kept = False  # keys not kept past those counted

    def _drop(self, key: str) -> None:
        """Count `key` as one not kept (once, however often it is logged)."""
        h = hash(key)
        if h in self._not_kept:
            return
        if len(self._not_kept) < NOT_KEPT_COUNTED:
            self._not_kept.add(h)
        else:
            self._more_not_kept = True

    def _new(self, key: str, start: int, steps: array | None = None) -> _Column | None:
        if len(self._cols) >= KEYS_KEPT:
            self._drop(key)
            return None
        col = self._cols[key] = _Column(start, steps)
        return col

    def not_kept_line(self) -> str:
        """'N more keys not kept' ('at least N' past those counted), or "" when none was."""
        n = len(self._not_kept)
        if not n:
            return ""
        return f"{'at least ' if self._more_not_kept else ''}{n} more keys not kept"

    def add(self, step: int, values: Mapping[str, float], cut: Sequence[str] = ()) -> None:
        """Append one train record's extra values at `step` (after every step held).

        `cut`: the names of the record's numbers not held (records.EXTRA_KEPT): each one that
        is no key kept is counted as not kept."""
        rows, cols = self._rows, self._cols
        n = len(rows)
        rows.append(step)
        for key, value in values.items():
            col = cols.get(key) or self._new(key, n)
            if col is not None:
                self._append(col, n, step, value)
        for key in cut:
            if key not in self._cols:
                self._drop(key)
        if len(cut) >= CUT_NAMED:  # the record named no more of them
            self._more_not_kept = True

    def _append(self, col: _Column, n: int, step: int, value: float) -> None:
        """Append the value of record `n`, at `step`, to its column.

        A column that skipped a record since its start keeps steps of its own from then on."""
        steps = col.steps
        if steps is None and col.start + len(col.values) != n:  # it skipped a record
            steps = col.steps = self._rows[col.start : col.start + len(col.values)]
        if steps is not None:
            steps.append(step)
        col.values.append(value)

    def _own(self, col: _Column) -> array:
        """The column's steps as its own array (a run of the rows made one)."""
        if col.steps is None:
            col.steps = self._rows[col.start : col.start + len(col.values)]
        return col.steps

    def extend(self, key: str, steps: array, values: array) -> None:
        """Take a whole column of `key` at once (a cold read).

        Its steps go forward from the last held; a step logged twice keeps its first value."""
        col = self._cols.get(key) or self._new(key, 0, array("q"))
        if col is None:
            return
        held_steps, held_values = self._own(col), col.values
        if _goes_forward(held_steps, steps):
            held_steps.extend(steps)
            held_values.extend(values)
            return
        for step, value in sorted(zip(steps, values, strict=True), key=lambda sv: sv[0]):
            if not held_steps or step > held_steps[-1]:
                held_steps.append(step)
                held_values.append(value)

    def cut(self, step: int) -> None:
        """Drop every value logged after `step` (a resume went back to it)."""
        rows = self._rows
        end = bisect_left(rows, step + 1)
        del rows[end:]
        for col in self._cols.values():
            steps, values = col.steps, col.values
            if steps is None:
                del values[max(0, end - col.start) :]
            elif steps and steps[-1] > step:
                i = bisect_left(steps, step + 1)
                del steps[i:]
                del values[i:]

    def at(self, step: int) -> dict[str, float]:
        """The values logged at `step`, by key."""
        rows = self._rows
        row = bisect_left(rows, step)
        on_row = row < len(rows) and rows[row] == step
        out = {}
        for key, col in self._cols.items():
            steps, values = col.steps, col.values
            if steps is None:
                if on_row and 0 <= row - col.start < len(values):
                    out[key] = values[row - col.start]
                continue
            i = bisect_left(steps, step)
            if i < len(steps) and steps[i] == step:
                out[key] = values[i]
        return out

    def names(self) -> list[str]:
        """The keys that hold at least one value, in the order first logged."""
        return [k for k, col in self._cols.items() if col.values]

    def series(self, key: str) -> tuple[array, array] | None:
        """The steps and values of `key` (its values are the store's own: do not change them)."""
        col = self._cols.get(key)
        if col is None:
            return None
        steps = col.steps
        if steps is None:  # a copy: the shared rows grow
            steps = self._rows[col.start : col.start + len(col.values)]
        return steps, col.values


def _goes_forward(held: array, steps: array) -> bool:
    """`steps` rise one by one, from past the last step `held`: appended as they are."""
    rising = all(a < b for a, b in zip(steps, steps[1:], strict=False))
    return rising and (not held or not steps or steps[0] > held[-1])
