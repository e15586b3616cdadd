"""The columnar run store: a run's records as columns, probes, checkpoints and events.

It holds train rows as columns, probes, checkpoints, events, segments, and the rules for a step seen
twice. `read.py` reads lines and whole files into it."""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import orjson

from fontaine_tui.core.limits import too_deep
from fontaine_tui.core.log.extras import ExtraSeries
from fontaine_tui.core.log.jsontext import readings
from fontaine_tui.core.log.oddvalues import NONE as NO_ODD
from fontaine_tui.core.log.oddvalues import OddValues
from fontaine_tui.core.log.records import (
    MALFORMED_KEPT,
    NAN,
    TRAIN_FIELDS,
    Alert,
    BadAlert,
    Checkpoint,
    Event,
    Malformed,
    Meta,
    Probe,
    Record,
    TrainPoint,
    _snippet,
    decode_line,
    to_record,
    train_point,
)

COLUMNS = ("time", *TRAIN_FIELDS)


@dataclass(frozen=True, slots=True)
class Segment:
    """One file of a log read as several.

    It is a rotated segment, or the file that took the log's name after a rotation. Line numbers
    in the store count on across segments."""

    name: str
    first_line: int  # the store's number for the segment's first line
    why: str = ""


def _identity(rec: Record) -> str:
    """Everything a record says except where it was read (NaN-safe, unlike ==)."""
    if isinstance(rec, TrainPoint):  # its extra keys in any order
        return repr((replace(rec, extra=_NO_EXTRA), sorted(rec.extra.items())))
    return (
        repr(replace(rec, line=0))
        if isinstance(rec, (Probe, Event, Checkpoint, Meta, Alert))
        else repr(rec)
    )


_NO_EXTRA: Mapping[str, float] = MappingProxyType({})


def _probe_values(p: Probe) -> str:
    """What a probe measured, not when it was logged or where.

    Two probes for one step that differ here are conflicting evidence."""
    return repr(
        (
            p.eval_chunk_mae,
            p.train_chunk_mae,
            p.eval_ar_ce,
            p.eval_flow_loss,
            sorted(p.breakdown.items()),
            p.n_frames,
            sorted(p.not_numbers),
            sorted(p.fields.items()),
        )
    )


def completes(old: Probe, new: Probe) -> bool:
    """Whether `new` is `old` with more keys.

    Such a `new` is a foreign step read before its writer logged all of it: every value `old`
    holds is the same in `new` (a number, or a value that is not one: `not_numbers`), and `new`
    holds more."""
    if not (old.fields or old.not_numbers):
        return False
    if len(new.fields) + len(new.not_numbers) <= len(old.fields) + len(old.not_numbers):
        return False
    return (
        _keeps_numbers(old, new)
        and old.breakdown == new.breakdown
        and old.n_frames == new.n_frames
        and set(old.not_numbers) <= set(new.not_numbers)
    )


def _keeps_numbers(old: Probe, new: Probe) -> bool:
    """Every number of `old` is the same in `new`: its fields and its summary values.

    A summary value that is NaN in `old` was not measured there."""
    if any(k not in new.fields or repr(new.fields[k]) != repr(v) for k, v in old.fields.items()):
        return False
    summaries = (
        (old.eval_chunk_mae, new.eval_chunk_mae),
        (old.train_chunk_mae, new.train_chunk_mae),
        (old.eval_ar_ce, new.eval_ar_ce),
        (old.eval_flow_loss, new.eval_flow_loss),
    )
    return all(a != a or repr(a) == repr(b) for a, b in summaries)


@dataclass(frozen=True, slots=True)
class Conflict:
    """Two different probes for one step with no resume between them: conflicting evidence.

    The first stays in `probes`. A verdict that reads this step is UNDECIDABLE."""

    step: int
    first: Probe
    second: Probe


@dataclass(frozen=True, slots=True)
class OutOfOrder:
    """A record that goes back in steps without a resume, or after the run's end.

    It is reported, never applied, so it cannot rewind the run or supersede a probe."""

    line: int
    kind: str
    step: int
    why: str


OUT_OF_ORDER_KEPT = 50
ALERTS_KEPT = 500  # the trainer's alerts kept (the newest); the count is exact beyond that


@dataclass
class RunStore:
    """Everything read from one log, train series stored as columns.

    Only a `resume` event goes back in time: the train series and probes of the abandoned
    timeline past the resume step are dropped (probes are kept in `superseded` so the resume
    stays visible), and those steps may be logged anew. A probe at or before the resume step
    stands: another value for it is a `Conflict`, as is a second probe for any step with other
    values. Records never rewind otherwise: a train record whose step does not go forward, or
    a new probe for a step before the latest probe, is out of order (counted, not applied),
    and nothing after the `end` event goes back before the end's step (a resume included). A
    record that repeats one already read, value for value (a log rewritten with the same
    content, lines copied twice by a rotation), changes nothing and is counted in `repeats`.
    A `meta` record naming another run or world size than the first is noted in `notices`.
    With `columns=False` only the steps of train records are kept (enough for a verdict); a
    train step read twice then counts as out of order even when identical.

    Line numbers given to the ingest functions count within the current file; the store adds
    `line_base`, so after `begin_segment` they go on counting where the last file ended.
    """

    steps: array = field(default_factory=lambda: array("q"), repr=False)
    columns: dict[str, array] = field(
        default_factory=lambda: {n: array("d") for n in COLUMNS}, repr=False
    )
    probes: dict[int, Probe] = field(default_factory=dict, repr=False)
    superseded: list[Probe] = field(default_factory=list, repr=False)
    metas: list[Meta] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    # kept as the events come, so a watcher's look at each record never walks them all
    resumes: list[Event] = field(default_factory=list, repr=False)
    warm_steps: set[int] = field(default_factory=set, repr=False)  # first steps after a (re)start
    checkpoints: list[Checkpoint] = field(default_factory=list, repr=False)
    malformed: list[Malformed] = field(default_factory=list, repr=False)
    malformed_count: int = 0
    lines: int = 0
    records: int = 0
    ignored: int = 0
    replaced_steps: int = 0
    repeats: int = 0
    version: int = 0
    probes_version: int = 0  # moves whenever `probes` or `superseded` change
    has_columns: bool = True
    segments: list[Segment] = field(default_factory=list, repr=False)
    line_base: int = 0
    conflicts: list[Conflict] = field(default_factory=list, repr=False)
    out_of_order: list[OutOfOrder] = field(default_factory=list, repr=False)
    out_of_order_count: int = 0
    notices: list[str] = field(default_factory=list, repr=False)
    # another trainer's eval values that are not numbers: probe values, said by the evidence gate
    odd_values: OddValues = NO_ODD
    ended_at: int | None = None  # the step of the last `end` event, until a resume
    # the train records' numbers beyond `columns`, one sparse series per key (with columns)
    extras: ExtraSeries = field(default_factory=ExtraSeries, repr=False)
    # the trainer's own alerts, each once (a line read again is the same alert), and the
    # alert records that could not be read: neither is evidence, nor in `counts`
    alerts: list[Alert] = field(default_factory=list, repr=False)
    alert_count: int = 0
    bad_alerts: list[Malformed] = field(default_factory=list, repr=False)
    bad_alert_count: int = 0
    _probe_max: int = field(default=-1, repr=False)
    _seen: set[bytes] = field(default_factory=set, repr=False)  # digests of what was said

    # -- segments -----------------------------------------------------------------------

    def begin_segment(self, name: str, why: str = "") -> None:
        """What follows comes from another file: keep everything read, count lines on."""
        self.line_base = self.lines
        self.segments.append(Segment(name, self.lines + 1, why))
        self.version += 1

    def count_odd_values(self, odd: OddValues) -> None:
        """The eval values not numbers, as the source's decoders count them now (a live read)."""
        if odd != self.odd_values:
            self.odd_values = odd
            self.version += 1

    def where(self, line: int) -> str:
        """A store line number as the user finds it: 'train_log.jsonl.1 line 12'."""
        seg = next((g for g in reversed(self.segments) if g.first_line <= line), None)
        if seg is None:
            return f"line {line}"
        return f"{seg.name} line {line - seg.first_line + 1}"

    # -- ingest -------------------------------------------------------------------------

    def add_malformed(self, line: int, reason: str, raw: bytes = b"") -> None:
        self.malformed_count += 1
        if len(self.malformed) < MALFORMED_KEPT:
            self.malformed.append(Malformed(line, reason, _snippet(raw)))

    def add_line(self, raw: bytes, line: int) -> Record | None:
        """Parse and apply one complete line (numbered within the current file).

        Malformed lines are counted, never raised."""
        line += self.line_base
        self.lines = max(self.lines, line)
        try:
            obj = decode_line(raw.rstrip(b"\r"))
        except ValueError as exc:
            self.add_malformed(line, str(exc), raw)
            return None
        return self.add_object(obj, line, raw)

    def add_object(self, obj: object, line: int, raw: bytes = b"") -> Record | None:
        if not isinstance(obj, dict):
            self.add_malformed(line, f"expected a JSON object, got {type(obj).__name__}", raw)
            return None
        if why := too_deep(raw, obj):  # decoded by the bulk reader: json_loads' bound
            self.add_malformed(line, why, raw)
            return None
        both = _two_readings(obj, raw)
        if both:  # a key written twice with two values
            return self._add_twice(both, line, raw)
        try:
            rec = to_record(obj, line)
        except BadAlert as exc:
            self.add_bad_alert(line, str(exc), raw or orjson.dumps(obj)[:120])
            return None
        except ValueError as exc:
            self.add_malformed(line, str(exc), raw or orjson.dumps(obj)[:120])
            return None
        if rec is None:
            self.ignored += 1
            return None
        self.add(rec, line)
        return rec

    def _add_twice(self, both: list[object], line: int, raw: bytes) -> Record | None:
        """Apply a record that names one key twice with different values.

        A probe is two probes for its step (conflicting evidence, reported as such). Any
        other record, or a probe whose step is written twice, is malformed, since which of
        the two it meant cannot be known; an alert is a bad alert, outside the evidence."""
        probes = _probes_of_one_step([_record_or_none(obj, line) for obj in both])
        if probes:
            for probe in probes:
                self.add(probe, line)
            return probes[-1]
        why = "a key written twice with different values"
        if all(isinstance(obj, dict) and obj.get("kind") == "alert" for obj in both):
            self.add_bad_alert(line, f"alert {why}", raw)
            return None
        self.add_malformed(line, why, raw)
        return None

    def add_bad_alert(self, line: int, reason: str, raw: bytes = b"") -> None:
        """An alert record that could not be read: counted, its first few kept."""
        self.bad_alert_count += 1
        self.version += 1
        if len(self.bad_alerts) < OUT_OF_ORDER_KEPT:
            self.bad_alerts.append(Malformed(line, reason, _snippet(raw)))

    def _add_alert(self, rec: Alert) -> None:
        if self._is_repeat(rec):  # the same line read again: the same alert
            return
        self.version += 1
        self.alert_count += 1
        self.alerts.append(rec)
        if len(self.alerts) > ALERTS_KEPT:
            del self.alerts[0]

    def add(self, rec: Record, line: int = 0) -> None:
        """Apply one record (`line`: the store's number for a train record's line)."""
        if isinstance(rec, Alert):  # health, not evidence: outside the records counted
            self._add_alert(rec)
            return
        self.records += 1
        if self._is_repeat(rec):
            self.repeats += 1
            return
        self.version += 1
        if isinstance(rec, TrainPoint):
            self._add_train(rec, line)
        elif isinstance(rec, Probe):
            self._add_probe(rec)
        elif isinstance(rec, Event):
            self._add_event(rec)
        elif isinstance(rec, Checkpoint):
            self.checkpoints.append(rec)
        elif isinstance(rec, Meta):
            self._add_meta(rec)

    def _add_train(self, rec: TrainPoint, line: int) -> None:
        """A train record: its step, and its values where columns are kept.

        Out of order where its step does not go forward."""
        if self.steps and rec.step <= self.steps[-1]:
            self._out_of_order(
                line,
                "train",
                rec.step,
                f"step {rec.step} after step {self.steps[-1]} without a resume",
            )
            return
        self.steps.append(rec.step)
        if not self.has_columns:
            return
        cols = self.columns
        cols["time"].append(rec.time)
        for name in TRAIN_FIELDS:
            cols[name].append(getattr(rec, name))
        if rec.extra or rec.extra_cut:
            self.extras.add(rec.step, rec.extra, rec.extra_cut)

    def _add_event(self, rec: Event) -> None:
        """An event; a resume rewinds the store to its step (out of order after the end)."""
        if rec.event == "resume" and not self._resume(rec):
            return
        if rec.event == "end":
            self.ended_at = rec.step
        self.events.append(rec)
        if rec.event == "resume":
            self.resumes.append(rec)
        if rec.event in ("start", "resume"):
            self.warm_steps.add(rec.step + 1)

    def _resume(self, rec: Event) -> bool:
        """Rewind to a resume's step; False (out of order) where it goes back before the end."""
        if self.ended_at is not None and rec.step < self.ended_at:
            self._out_of_order(
                rec.line,
                "event",
                rec.step,
                f"a resume to step {rec.step} after the run ended at step {self.ended_at}",
            )
            return False
        self._rewind(rec.step)
        self.ended_at = None
        return True

    def _add_probe(self, rec: Probe) -> None:
        old = self.probes.get(rec.step)
        if old is not None and _probe_values(old) == _probe_values(rec):
            self.repeats += 1  # the same measurement logged again (another time stamp)
            return
        if old is not None and completes(old, rec):  # the rest of the step's values
            self.probes[rec.step] = rec
            self.probes_version += 1
            return
        if old is not None:  # a resume dropped what came after it: this one is another value
            self.conflicts.append(Conflict(rec.step, old, rec))
            self.probes_version += 1
            return
        if self.ended_at is not None and rec.step < self.ended_at:
            self._out_of_order(
                rec.line,
                "eval",
                rec.step,
                f"a probe for step {rec.step} after the run ended at step {self.ended_at}",
            )
            return
        if rec.step < self._probe_max:
            self._out_of_order(
                rec.line,
                "eval",
                rec.step,
                f"a probe for step {rec.step} "
                f"after the probe for step {self._probe_max} without a resume",
            )
            return
        self.probes[rec.step] = rec
        self.probes_version += 1
        self._probe_max = max(self._probe_max, rec.step)

    def _add_meta(self, rec: Meta) -> None:
        first = self.metas[0] if self.metas else None
        self.metas.append(rec)
        if first is None:
            return
        diffs = []
        if rec.run != first.run:
            diffs.append(f"run {rec.run!r} (the log began with {first.run!r})")
        if rec.world_size != first.world_size:
            diffs.append(f"world size {rec.world_size} (the log began with {first.world_size})")
        if diffs:
            self.notices.append(
                f"{self.where(rec.line)}: a meta record for {' and '.join(diffs)}"
                "; two runs may be writing one file"
            )

    def _out_of_order(self, line: int, kind: str, step: int, why: str) -> None:
        self.out_of_order_count += 1
        if len(self.out_of_order) < OUT_OF_ORDER_KEPT:
            self.out_of_order.append(OutOfOrder(line, kind, step, why))

    def _is_repeat(self, rec: Record) -> bool:
        """Has the log said exactly this before (and it still stands)?"""
        if isinstance(rec, TrainPoint):
            steps = self.steps
            if not steps or rec.step > steps[-1] or not self.has_columns:
                return False
            i = bisect_left(steps, rec.step)
            return steps[i] == rec.step and _identity(self.train_at(i)) == _identity(rec)
        if isinstance(rec, Probe):
            return False  # _add_probe compares what was measured
        key = hashlib.blake2b(
            _identity(rec).encode("utf-8", "surrogatepass"), digest_size=16
        ).digest()
        if key in self._seen:
            return True
        self._seen.add(key)
        return False

    def _rewind(self, step: int) -> None:
        """Drop what the log said about steps after `step` (a resume went back to it)."""
        steps = self.steps
        if steps and steps[-1] > step:
            cut = bisect_left(steps, step + 1)
            self.replaced_steps += len(steps) - cut
            del steps[cut:]
            for col in self.columns.values():
                del col[cut:]
            self.extras.cut(step)
        if self.probes and self._probe_max > step:
            self.probes_version += 1
            for s in sorted(s for s in self.probes if s > step):
                self.superseded.append(self.probes.pop(s))
            self._probe_max = max(self.probes, default=-1)

    # -- queries ------------------------------------------------------------------------

    @property
    def last_step(self) -> int:
        candidates = [self.steps[-1]] if self.steps else []
        if self.probes:
            candidates.append(max(self.probes))
        return max(candidates, default=0)

    def train_at(self, index: int) -> TrainPoint:
        cols = self.columns
        if not self.has_columns:
            return train_point(self.steps[index], NAN, [NAN] * len(TRAIN_FIELDS))
        step = self.steps[index]
        return train_point(
            step,
            cols["time"][index],
            [cols[n][index] for n in TRAIN_FIELDS],
            MappingProxyType(self.extras.at(step)),
        )

    def probe_steps(self) -> list[int]:
        return sorted(self.probes)

    # What the surfaces may know of the probes without their values: where they stand, when
    # they were written, what they logged. The values are the evidence gate's to hand out
    # (core/run/evidence.py's `seen_probes`), which withholds them while the read is hidden.

    def has_probe(self, step: int) -> bool:
        return step in self.probes

    def last_probe_step(self) -> int | None:
        return max(self.probes) if self.probes else None

    def probe_time(self, step: int) -> float:
        """When the probe at `step` was written (unix seconds); NaN where none stands."""
        probe = self.probes.get(step)
        return probe.time if probe is not None else float("nan")

    def probe_fields(self) -> set[str]:
        """The names of the fields the probes logged, a value that is not a number included."""
        return {
            name
            for probe in self.probes.values()
            for name in (*probe.fields, *(k for k, _ in probe.not_numbers))
        }

    def superseded_at(self) -> list[tuple[int, int]]:
        """(step, line) of each probe a resume superseded, in the order superseded."""
        return [(p.step, p.line) for p in self.superseded]

    def counts(self) -> dict[str, int]:
        return {
            "lines": self.lines,
            "records": self.records,
            "malformed": self.malformed_count,
            "ignored": self.ignored,
            "resumes": len(self.resumes),
            "replaced_steps": self.replaced_steps,
            "repeats": self.repeats,
            "out_of_order": self.out_of_order_count,
            "conflicts": len(self.conflicts),
            "segments": max(1, len(self.segments)),
        }


def _two_readings(obj: dict, raw: bytes) -> list[object]:
    """A line's two readings where it names a key twice with two values; else none.

    Asked only of a line read from its text (`raw`), and never of a train record's."""
    if not raw or obj.get("kind") == "train":
        return []
    both = readings(raw, obj)
    return both if len(both) > 1 else []


def _record_or_none(obj: object, line: int) -> Record | None:
    """One reading of a line as a record; None where it is not an object or not a record."""
    try:
        return to_record(obj, line) if isinstance(obj, dict) else None
    except ValueError:
        return None


def _probes_of_one_step(recs: list[Record | None]) -> list[Probe]:
    """The readings, where every one is a probe and all are of one step; else none."""
    probes = [r for r in recs if isinstance(r, Probe)]
    if len(probes) == len(recs) and len({p.step for p in probes}) == 1:
        return probes
    return []
