"""One metric's series from a run folder, for `fontaine-tui get`: read, cut to steps, written.

The folder is read as `inspect` reads it (ours, or any format the tool reads, every key kept;
a launched [command] run through its frozen [source], as `verdict` reads it, which says which
keys are probes), its metrics are model/metrics.py's (every numeric field, as the metric browser lists them),
and the metric's steps and values come out as CSV (a header line, one row per step, NaN as
`nan`) or as one JSON document (schema SERIES_SCHEMA, docs/json.md). A step asked for that
the run did not log is named, never written as a number. A probe logged twice at one step with
the metric read differently (another value, a value that is not a number, or the metric left
out) is never resolved by picking one: each value gets its own row, the first logged first,
the JSON's `conflicts` names the step, and `said` says it in the verdict's words
(core/verdict/rules.py's conflict_reason). Probes that differ only in another
field are no conflict of this series: the metric's value there is one. A probe's value that is
not a number (a boolean, a string, null) is read as the verdict reads it: NaN in the series
(model/metrics.py), and named with what it was in `not_numbers`. The probes and conflicts come
from the evidence gate (`seen_probes`, `seen_conflicts`), which gives none while the read is
hidden.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.candidates import choose
from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.formats.inspect import load
from fontaine_tui.core.log.records import Probe
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.run.evidence import conflict_in_words, seen_conflicts, seen_probes
from fontaine_tui.core.runfolder import LOG
from fontaine_tui.core.verdict.record import json_num
from fontaine_tui.model.judge import launched_source
from fontaine_tui.model.metrics import PROBE, TRAIN, MetricIndex

SERIES_SCHEMA = "fontaine-tui/series/1"
STEPS_RULE = "expected A:B (either end may be left out) or a list of steps, as 100,200"
STEP_DIGITS = 18  # a step fits a signed 64-bit integer; a longer number is a typo, not a step


@dataclass(frozen=True, slots=True)
class Steps:
    """The steps asked for: a range (either end open) or a list; all of them when neither."""

    first: int | None = None
    last: int | None = None
    listed: frozenset[int] = frozenset()

    def keeps(self, step: int) -> bool:
        if self.listed:
            return step in self.listed
        return (self.first is None or step >= self.first) and (
            self.last is None or step <= self.last
        )


def parse_steps(text: str) -> Steps:
    """--steps A:B, A:, :B or A,B,C; InputError (one line) for anything else."""
    text = text.strip()
    if any(len(n) > STEP_DIGITS for n in re.findall(r"\d+", text)):
        raise InputError(f"--steps: a step has at most {STEP_DIGITS} digits ({STEPS_RULE})")
    if re.fullmatch(r"\d*:\d*", text) and text != ":":
        return _step_range(text)
    if re.fullmatch(r"\d+(,\d+)*", text):
        return Steps(listed=frozenset(int(x) for x in text.split(",")))
    raise InputError(f"--steps: {text!r}: {STEPS_RULE}")


def _step_range(text: str) -> Steps:
    """A:B, A: or :B as a range; InputError when it ends before it starts."""
    a, b = text.split(":")
    first, last = (int(a) if a else None), (int(b) if b else None)
    if first is not None and last is not None and first > last:
        raise InputError(f"--steps: {text!r}: the range ends before it starts ({STEPS_RULE})")
    return Steps(first, last)


Clashes = tuple[tuple[int, tuple[float, ...]], ...]  # a step, each value logged there
NotNumbers = tuple[tuple[int, str], ...]  # a step, what its probe logged that is not a number


@dataclass(frozen=True, slots=True)
class Got:
    """The series as read: where from, the metric and its kind, the steps and values kept."""

    folder: str
    format: str
    metric: str
    key: str  # the field read: `metric` less a "train:" or "probe:" the name needed
    kind: str  # "train" or "probe"
    steps: tuple[int, ...]
    values: tuple[float, ...]
    missing: tuple[int, ...]  # listed steps the run did not log the metric at
    clashes: Clashes = ()
    said: tuple[str, ...] = ()  # each step in `clashes` in the verdict's words
    # a step whose probe logged the metric as a value that is not a number, and what it was
    not_numbers: NotNumbers = ()

    def to_json(self) -> dict[str, object]:
        return {
            "schema": SERIES_SCHEMA,
            "folder": self.folder,
            "format": self.format,
            "metric": self.metric,
            "kind": self.kind,
            "count": len(self.steps),
            "steps": list(self.steps),
            "values": [json_num(v) for v in self.values],
            "missing": list(self.missing),
            "conflicts": [
                {"step": step, "values": [json_num(v) for v in values]}
                for step, values in self.clashes
            ],
            "not_numbers": [{"step": step, "logged": what} for step, what in self.not_numbers],
        }

    def to_csv(self) -> str:
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["step", self.metric])
        for step, value in zip(self.steps, self.values, strict=True):
            w.writerow([step, number(value)])
        return out.getvalue()


def number(x: float) -> str:
    """A value as CSV writes it: shortest round-trip digits; nan, inf, -inf as such."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x)


def read_store(folder: Path, kind: str = "", path: str = "", run: str = "") -> tuple[RunStore, str]:
    """The run in `folder`, every key kept, and the format it was read as.

    A launched [command] run is read through its frozen [source] as `verdict` reads it
    (model/judge.py's `launched_source`): its patterns, and its own rule of which keys are
    probes, so no train row is called a probe. Any other run is read with every key an eval
    key, as `inspect` reads it."""
    from fontaine_tui.core.log.read import load_log

    chosen, _ = choose(folder, kind, path, run, launched_source(str(folder)))
    if chosen.frozen is not None:
        return load_source(folder, chosen.frozen).store, chosen.kind
    if chosen.kind == "fontaine":
        try:
            return load_log(folder / LOG, history=True), chosen.kind
        except OSError as exc:
            raise InputError(f"{folder / LOG}: cannot read ({exc.strerror or exc})") from None
    return load(folder, chosen)[0].store, chosen.kind


def get(
    folder: Path,
    metric: str,
    steps: Steps,
    hides: Callable[[], bool],
    kind: str = "",
    path: str = "",
    run: str = "",
) -> Got:
    """`metric`'s series in the run in `folder`, kept to `steps`.

    `hides` says whether the run's read is hidden (the blind), asked only of a probe field: a
    hidden one comes back with no value (core/run/evidence.py's `seen_probes`). InputError
    naming the metrics there when the run has no such metric."""
    store, fmt = read_store(folder, kind, path, run)
    index = MetricIndex(store, hidden=True)
    _refuse_unnamed(folder, metric, index.every_name(), store)
    if index.kind(metric) == PROBE and not hides():
        index.hidden = False
    found = index.series(metric)
    probe = found.kind == PROBE  # a train record's step is never two: no conflict
    reads = probe_reads(store, found.key, index.hidden) if probe else NO_READS
    rows = reads.rows(found.steps, found.values)
    kept = [(s, x) for s, values in rows if steps.keeps(s) for x in values]
    logged = {s for s, _ in kept}
    return Got(
        str(folder),
        fmt,
        metric,
        found.key,
        found.kind,
        tuple(s for s, _ in kept),
        tuple(v for _, v in kept),
        tuple(sorted(steps.listed - logged)),
        *reads.at(logged),
    )


_ONE_KIND = {TRAIN: "train record", PROBE: "probe"}  # what logs a series of each kind


def _refuse_unnamed(folder: Path, metric: str, names: list[str], store: RunStore) -> None:
    """InputError when `metric` names no one series: logged by both kinds, or not at all.

    A name qualified with the kind that did not log it (`probe:loss` where only the train
    records log `loss`) is said so: a train row is never read as a probe's."""
    if metric in names:
        return
    kind, _, key = metric.partition(":")
    if kind in _ONE_KIND and key in names:  # `probe:loss` where only the train records log it
        one, other = _ONE_KIND[kind], _ONE_KIND[PROBE if kind == TRAIN else TRAIN]
        raise InputError(f"{folder}: no {one} logged {key!r}, the {other}s did (name {key})")
    if {f"train:{metric}", f"probe:{metric}"} <= set(names):
        raise InputError(
            f"{folder}: {metric!r} is logged by both train records and probes: name "
            f"train:{metric} or probe:{metric}"
        )
    shown = ", ".join(names[:40]) + (f" and {len(names) - 40} more" if len(names) > 40 else "")
    dropped = store.extras.not_kept_line()  # a runaway log: keys past KEYS_KEPT not kept
    more = f"; {dropped}" if dropped else ""
    raise InputError(f"{folder}: no metric {metric!r} (metrics: {shown or 'none'}{more})")


# `key` as one probe reads it: (the repr of its value, what was logged when not a number), or
# None when the probe did not log `key`
_Reading = tuple[str, str] | None


def _reading(p: Probe, key: str) -> _Reading:
    if not p.has(key):
        return None
    return repr(p.value(key)), "" if key in p.fields else p.why_not(key)


@dataclass(frozen=True, slots=True)
class ProbeReads:
    """A probe field at each probe step as the verdict reads it, beyond one number a step."""

    # each step whose probes read the field differently: every value, the first logged first
    clashes: Mapping[int, tuple[float, ...]]
    said: Mapping[int, str]  # each step in `clashes` in the verdict's words
    # each step a probe logged the field as a value that is not a number, and what it was
    not_numbers: tuple[tuple[int, str], ...]

    def rows(
        self, steps: Iterable[int], values: Iterable[float]
    ) -> Iterable[tuple[int, tuple[float, ...]]]:
        """Each step's values: the series' one, or every value the probes read there in conflict.

        A conflicting probe may log the metric where the standing one did not.
        """
        rows = zip(steps, ((v,) for v in values), strict=True)
        if not self.clashes:
            return rows
        return sorted({**dict(rows), **self.clashes}.items())

    def at(self, logged: set[int]) -> tuple[Clashes, tuple[str, ...], NotNumbers]:
        """The clashes, their words and the values not numbers at the `logged` steps, by step."""
        clash = sorted(s for s in self.clashes if s in logged)
        return (
            tuple((s, self.clashes[s]) for s in clash),
            tuple(self.said[s] for s in clash),
            tuple((s, what) for s, what in self.not_numbers if s in logged),
        )


NO_READS = ProbeReads(MappingProxyType({}), MappingProxyType({}), ())


def probe_reads(store: RunStore, key: str, hidden: bool) -> ProbeReads:
    """`key` at the probes and conflicting probes as the verdict reads it.

    The probes come from the evidence gate (`seen_probes`, `seen_conflicts`): none while
    `hidden`. A probe's value is `Probe.value` (NaN for a value that is not a number: a boolean, a
    string, null, which `Probe.why_not` names). Two probes for one step conflict for `key` when
    they read it differently: other values, a number and a value that is not one, or one that
    did not log it; each value is kept, the first first, and the first such pair said as the
    verdict says it (conflict_reason, as if `key` were its field). Probes that differ only in
    other fields are no conflict for `key`."""
    odd = [
        (step, p.why_not(key))
        for step, p in sorted(seen_probes(store, hidden).items())
        if key not in p.fields and p.has(key)
    ]
    clashes: dict[int, tuple[float, ...]] = {}
    said: dict[int, str] = {}
    held: dict[int, list[_Reading]] = {}
    for c in seen_conflicts(store, hidden):
        first = _reading(c.first, key)
        seen = held.setdefault(c.step, [first])
        second = _reading(c.second, key)
        if second in seen:
            continue
        seen.append(second)
        values = clashes.get(c.step, () if first is None else (c.first.value(key),))
        if second is not None:
            values += (c.second.value(key),)
            if second[1]:
                odd.append((c.step, second[1]))
        clashes[c.step] = values
        said.setdefault(c.step, conflict_in_words(store, c, key))
    odd.sort(key=lambda at: at[0])  # stable: at a step, the standing probe's first
    return ProbeReads(MappingProxyType(clashes), MappingProxyType(said), tuple(odd))
