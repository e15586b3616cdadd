"""Every number a run logs, as a series by step: the metric browser's data, and `get`'s.

A field is a train record's column (`loss`, `lr`, `grad_norm`, ...), any other number a train
record logged (`extras`: a foreign run's keys under their own names, nested keys by dotted
path), or a field of the probes (`eval_ar_ce`, `breakdown.rig`, `eval/mae`). A series holds
the steps that logged the field and its values there: a step that did not log it holds
nothing, a logged NaN or infinity stays what it was, and a probe's value that is not a number
(a boolean, a string) is NaN, as the verdict reads it.

A train column read from a key logged under another name (`learning_rate` is `lr`) is listed
under that key only (`get` still takes its own name). A name logged by both train records and
probes is listed twice, as `train:NAME` and `probe:NAME`. A train column every record left empty (NaN throughout: another trainer's run
has no `ar_ce`) is not listed, except in the engine's own log (it has a meta record), where
every column was written.
"""

from __future__ import annotations

import bisect
import math
import time
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fontaine_tui.core.limits import FILTER_BUDGET_S, PatternError, UserPattern
from fontaine_tui.core.log.formats.grouper import LOSS_NAMES, TRAIN_ALIASES
from fontaine_tui.core.log.records import TRAIN_FIELDS, Probe
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.run.evidence import seen_probes

TRAIN, PROBE = "train", "probe"


@dataclass(frozen=True, slots=True)
class Series:
    """One field's steps and values, in step order.

    The sequences may be the store's own live columns: read them, never change them."""

    name: str  # as listed (qualified when train and probes both log it)
    key: str  # as logged
    kind: str  # TRAIN or PROBE
    steps: Sequence[int]
    values: Sequence[float]


class _Written:
    """Which train columns hold a value, each column scanned once as it grows.

    A resume (the store's `replaced_steps` moving) starts the scan over."""

    def __init__(self) -> None:
        self._stamp = -1
        self._scanned: dict[str, int] = {}
        self._found: set[str] = set()

    def columns(self, store: RunStore) -> list[str]:
        if not store.has_columns or not store.steps:
            return []
        if store.metas:  # the engine's log writes every column
            return list(TRAIN_FIELDS)
        if store.replaced_steps != self._stamp:
            self._stamp, self._scanned, self._found = store.replaced_steps, {}, set()
        for name in TRAIN_FIELDS:
            if name not in self._found:
                self._scan(name, store.columns[name])
        return [n for n in TRAIN_FIELDS if n in self._found]

    def _scan(self, name: str, col: Sequence[float]) -> None:
        """The column's rows not scanned yet searched for a value (one that is not NaN)."""
        start = self._scanned.get(name, 0)
        if any(not math.isnan(x) for x in col[start:]):
            self._found.add(name)
        self._scanned[name] = len(col)


def _probe_columns(probes: Mapping[int, Probe]) -> dict[str, tuple[array, array]]:
    """Every probe field as two columns (steps, values), in one pass over the probes.

    A value that is not a number (a boolean, a string, null) is NaN there, as the verdict reads
    it (`Probe.value`): the step logged the field, and a read at it is UNDECIDABLE."""
    out: dict[str, tuple[array, array]] = {}
    for step in sorted(probes):
        probe = probes[step]
        odd = dict.fromkeys(k for k, _ in probe.not_numbers if k not in probe.fields)
        for key in (*probe.fields, *odd):
            col = out.get(key)
            if col is None:
                col = out[key] = (array("q"), array("d"))
            col[0].append(step)
            col[1].append(probe.value(key))
    return out


def _derived(store: RunStore) -> set[str]:
    """The train columns read from a key the run logged under another name, listed under it.

    Another trainer's `learning_rate` is the `lr` column too: the key is listed, its column
    not again (`series` still gives the column by its own name)."""
    if store.metas:  # the engine's own log: its columns are what it logged
        return set()
    logged = set(store.extras.names())
    return {
        column
        for column, names in (("loss", LOSS_NAMES), *TRAIN_ALIASES.items())
        if any(name != column and name in logged for name in names)
    }


def _listed(train: list[str], probe: list[str]) -> dict[str, tuple[str, str]]:
    """Each field by its listed name, as (kind, key); a key both kinds log is named KIND:KEY."""
    both = set(train) & set(probe)
    where: dict[str, tuple[str, str]] = {}
    for key in train:
        where[f"{TRAIN}:{key}" if key in both else key] = (TRAIN, key)
    for key in probe:
        where[f"{PROBE}:{key}" if key in both else key] = (PROBE, key)
    return where


class MetricIndex:
    """A store's fields and series, kept until the store changes.

    Built again (in one pass) only when the store's version or its probes' moved; the train
    series are the store's own columns, never copied. While `hidden` (the blind's word on the
    run's read), the probe fields are listed with no values: the evidence gate
    (core/run/evidence.py's `seen_probes`) gives none."""

    def __init__(self, store: RunStore, hidden: bool) -> None:
        self.store = store
        self.hidden = hidden
        self._stamp: tuple[int, int, bool] | None = None
        self._probes: dict[str, tuple[array, array]] = {}
        self._where: dict[str, tuple[str, str]] = {}  # listed name -> (kind, key)
        self._names: list[str] = []
        self._written = _Written()

    def _refresh(self) -> None:
        store = self.store
        stamp = (store.version, store.probes_version, self.hidden)
        if stamp == self._stamp:
            return
        if self._stamp is None or stamp[1:] != self._stamp[1:]:
            self._probes = self._probe_series()
        self._stamp = stamp
        train = (
            self._written.columns(store) + sorted(store.extras.names()) if store.has_columns else []
        )
        self._where = _listed(train, sorted(self._probes))
        derived = _derived(store)
        self._names = [n for n in self._where if n not in derived]

    def _probe_series(self) -> dict[str, tuple[array, array]]:
        """The probe fields' columns; while hidden, every field listed with no value shown."""
        probes = _probe_columns(seen_probes(self.store, self.hidden))
        for name in self.store.probe_fields() - set(probes) if self.hidden else ():
            probes[name] = (array("q"), array("d"))  # listed, no value shown
        return probes

    @property
    def not_kept(self) -> str:
        """The line on train keys past the store's bound on distinct keys, or ""."""
        return self.store.extras.not_kept_line()

    def names(self) -> list[str]:
        """Every field, the train columns first, then the other train keys, then the probes'."""
        self._refresh()
        return self._names

    def every_name(self) -> list[str]:
        """Every name `series` gives: those listed, and the columns listed under a logged key."""
        self._refresh()
        return list(self._where)

    def kind(self, name: str) -> str:
        """Whether `name` is a train field or a probe field (KeyError when not listed)."""
        self._refresh()
        return self._where[name][0]

    def series(self, name: str) -> Series:
        """The series of `name` as listed; KeyError naming it when the run has no such field."""
        self._refresh()
        where = self._where.get(name)
        if where is None:
            raise KeyError(f"no field {name!r} in this run ({len(self._names)} fields)")
        kind, key = where
        store = self.store
        if kind == PROBE:
            steps, values = self._probes[key]
            return Series(name, key, kind, steps, values)
        if key in store.columns and key in TRAIN_FIELDS:
            return Series(name, key, kind, store.steps, store.columns[key])
        held = store.extras.series(key)
        assert held is not None  # listed, so held
        return Series(name, key, kind, held[0], held[1])

    def times(self, series: Series) -> Sequence[float]:
        """When each of `series`' points was logged, for the charts' wall-time axis.

        Unix seconds, NaN where its record wrote no time. A train column's are the store's own time column; another train key's are its steps'
        train records' times; a probe's, its probe record's (when it was written carries no
        value: the store says it, blinded or not, and a blinded probe series has no points)."""
        store = self.store
        if series.kind == PROBE:
            return [store.probe_time(int(s)) for s in series.steps]
        clock = store.columns["time"]
        if series.steps is store.steps:
            return clock
        steps = store.steps
        out = []
        for s in series.steps:
            i = bisect.bisect_left(steps, s)
            out.append(clock[i] if i < len(steps) and steps[i] == s else math.nan)
        return out


def run_start(store: RunStore) -> float:
    """When the run's first record was logged (unix seconds; NaN where none wrote a time).

    The earliest time its first meta, event, train record or probe wrote."""
    firsts: list[float] = []
    if store.metas:
        firsts.append(store.metas[0].time)
    if store.events:
        firsts.append(store.events[0].time)
    if store.has_columns and store.steps:
        firsts.append(store.columns["time"][0])
    probes = store.probe_steps()
    if probes:
        firsts.append(store.probe_time(probes[0]))
    finite = [t for t in firsts if math.isfinite(t)]
    return min(finite) if finite else math.nan


def series(store: RunStore, name: str, hidden: bool) -> Series:
    """One field's series by name; KeyError naming the field when the run has none."""
    return MetricIndex(store, hidden).series(name)


TOO_SLOW = "the pattern takes too long on these names"


def compile_filter(pattern: str) -> UserPattern:
    """A typed filter as a regular expression (case-insensitive, Python's `re` syntax).

    ValueError says in one line what is wrong with an invalid one (core/limits.py's bounds on
    a user pattern: its length, the cost of compiling it)."""
    try:
        return UserPattern(pattern, ignore_case=True)
    except PatternError as exc:
        if exc.invalid:
            raise ValueError(f"not a regular expression: {pattern!r} ({exc})") from None
        raise ValueError(f"{pattern[:60]!r}: {exc}") from None


def matching(names: Sequence[str], pattern: str, budget_s: float = FILTER_BUDGET_S) -> list[str]:
    """The names a regular expression finds (anywhere in the name; "" keeps all).

    ValueError for an invalid expression, as `compile_filter`, and for one that takes more
    than `budget_s` over all the names, its compile included (a pattern that backtracks
    without end, such as `(a|aa)+b`, would hold the console)."""
    if not pattern:
        return list(names)
    end = time.monotonic() + budget_s
    found = compile_filter(pattern).search
    out = []
    try:
        for name in names:
            if found(name, end - time.monotonic()) is not None:
                out.append(name)
    except PatternError:
        raise ValueError(TOO_SLOW) from None
    return out
