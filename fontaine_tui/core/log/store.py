"""The columnar run store, and reading lines into it (in batches, or a whole file in parallel)."""

from __future__ import annotations

import gzip
import multiprocessing
import os
import struct
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import compress, repeat
from operator import attrgetter, ge, itemgetter, ne
from pathlib import Path

import msgspec
import orjson

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.lines import CR_NOTE, LineCutter, cr_only
from fontaine_tui.core.log.records import (
    MALFORMED_KEPT,
    NAN,
    TRAIN_FIELDS,
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
)
from fontaine_tui.core.runfolder import check_regular, rotated_segments

COLUMNS = ("time", *TRAIN_FIELDS)


@dataclass(frozen=True, slots=True)
class Segment:
    """One file of a log read as several: a rotated segment, or the file that took the log's
    name after a rotation. Line numbers in the store count on across segments."""

    name: str
    first_line: int  # the store's number for the segment's first line
    why: str = ""


def _identity(rec: Record) -> str:
    """Everything a record says except where it was read (NaN-safe, unlike ==)."""
    return repr(replace(rec, line=0)) if isinstance(rec, (Probe, Event, Checkpoint, Meta)) \
        else repr(rec)


def _probe_values(p: Probe) -> str:
    """What a probe measured (not when it was logged or where): two probes for one step that
    differ here are conflicting evidence."""
    return repr((p.eval_chunk_mae, p.train_chunk_mae, p.eval_ar_ce, p.eval_flow_loss,
                 sorted(p.breakdown.items()), p.n_frames, p.not_numbers))


@dataclass(frozen=True, slots=True)
class Conflict:
    """Two different probes for one step with no resume between them: conflicting evidence.
    The first stays in `probes`; a verdict that reads this step is UNDECIDABLE."""

    step: int
    first: Probe
    second: Probe


@dataclass(frozen=True, slots=True)
class OutOfOrder:
    """A record that goes back in steps without a resume (or after the run's end): reported,
    never applied, so it cannot rewind the run or supersede a probe."""

    line: int
    kind: str
    step: int
    why: str


OUT_OF_ORDER_KEPT = 50


@dataclass
class RunStore:
    """Everything read from one log, train series stored as columns.

    Only a `resume` event goes back in time: the train series and probes of the abandoned
    timeline past the resume step are dropped (probes are kept in `superseded` so the resume
    stays visible), and a probe for a step read before the resume may be logged again (the
    later one wins). Without a resume, records never rewind: a train record whose step does not
    go forward is out of order (counted, not applied), a second probe for a step with other
    values is a `Conflict`, and nothing after the `end` event goes back before the end's step
    (a resume included). A record that repeats one already read, value for value (a log
    rewritten with the same content, lines copied twice by a rotation), changes nothing and is
    counted in `repeats`. A `meta` record naming another run or world size than the first is
    noted in `notices`. With `columns=False` only the steps of train records are kept (enough
    for a verdict); a train step read twice then counts as out of order even when identical.

    Line numbers given to the ingest functions count within the current file; the store adds
    `line_base`, so after `begin_segment` they go on counting where the last file ended.
    """

    steps: array = field(default_factory=lambda: array("q"), repr=False)
    columns: dict[str, array] = field(
        default_factory=lambda: {n: array("d") for n in COLUMNS}, repr=False)
    probes: dict[int, Probe] = field(default_factory=dict, repr=False)
    superseded: list[Probe] = field(default_factory=list, repr=False)
    metas: list[Meta] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
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
    ended_at: int | None = None  # the step of the last `end` event, until a resume
    _probe_max: int = field(default=-1, repr=False)
    _seen: set[str] = field(default_factory=set, repr=False)
    _replaceable: set[int] = field(default_factory=set, repr=False)

    # -- segments -----------------------------------------------------------------------

    def begin_segment(self, name: str, why: str = "") -> None:
        """What follows comes from another file: keep everything read, count lines on."""
        self.line_base = self.lines
        self.segments.append(Segment(name, self.lines + 1, why))
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
        """Parse and apply one complete line (numbered within the current file); malformed
        lines are counted, never raised."""
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
        try:
            rec = to_record(obj, line)
        except ValueError as exc:
            self.add_malformed(line, str(exc), raw or orjson.dumps(obj)[:120])
            return None
        if rec is None:
            self.ignored += 1
            return None
        self.add(rec, line)
        return rec

    def add(self, rec: Record, line: int = 0) -> None:
        """Apply one record (`line`: the store's number for a train record's line)."""
        self.records += 1
        if self._is_repeat(rec):
            self.repeats += 1
            return
        self.version += 1
        if isinstance(rec, TrainPoint):
            if self.steps and rec.step <= self.steps[-1]:
                self._out_of_order(line, "train", rec.step,
                                   f"step {rec.step} after step {self.steps[-1]} without a resume")
                return
            self.steps.append(rec.step)
            if self.has_columns:
                cols = self.columns
                cols["time"].append(rec.time)
                for name in TRAIN_FIELDS:
                    cols[name].append(getattr(rec, name))
        elif isinstance(rec, Probe):
            self._add_probe(rec)
        elif isinstance(rec, Event):
            if rec.event == "resume":
                if self.ended_at is not None and rec.step < self.ended_at:
                    self._out_of_order(rec.line, "event", rec.step,
                                       f"a resume to step {rec.step} after the run ended at "
                                       f"step {self.ended_at}")
                    return
                self._rewind(rec.step)
                self._replaceable = set(self.probes)
                self.ended_at = None
            elif rec.event == "end":
                self.ended_at = rec.step
            self.events.append(rec)
        elif isinstance(rec, Checkpoint):
            self.checkpoints.append(rec)
        elif isinstance(rec, Meta):
            self._add_meta(rec)

    def _add_probe(self, rec: Probe) -> None:
        old = self.probes.get(rec.step)
        if old is not None and _probe_values(old) == _probe_values(rec):
            self.repeats += 1  # the same measurement logged again (another time stamp)
            return
        if old is not None and rec.step not in self._replaceable:
            self.conflicts.append(Conflict(rec.step, old, rec))
            self.probes_version += 1
            return
        if old is not None:  # logged again after a resume: the later one wins
            self._replaceable.discard(rec.step)
            self.superseded.append(old)
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
            self.notices.append(f"{self.where(rec.line)}: a meta record for {' and '.join(diffs)}"
                                "; two runs may be writing one file")

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
        key = _identity(rec)
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
            return TrainPoint(self.steps[index], NAN, *(NAN for _ in TRAIN_FIELDS))
        return TrainPoint(self.steps[index], cols["time"][index],
                          *(cols[n][index] for n in TRAIN_FIELDS))

    def last_train(self) -> TrainPoint | None:
        return self.train_at(len(self.steps) - 1) if self.steps else None

    def probe_steps(self) -> list[int]:
        return sorted(self.probes)

    @property
    def resumes(self) -> list[Event]:
        return [e for e in self.events if e.event == "resume"]

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


# -- parsing a batch of lines ----------------------------------------------------------------


@dataclass
class Parsed:
    """A batch of lines decoded: train rows as columns, everything else in order."""

    first_line: int
    last_line: int
    train_lines: array = field(default_factory=lambda: array("q"))
    train_steps: array = field(default_factory=lambda: array("q"))
    columns: dict[str, array] | None = None
    others: list[tuple[int, object, bytes]] = field(default_factory=list)
    malformed: list[tuple[int, str, bytes]] = field(default_factory=list)


def _decode_slow(raw: bytes) -> object:
    """The fallback for a line orjson rejects: NaN/Infinity tokens, blank or malformed lines."""
    if not raw.strip():
        return _BLANK
    try:
        return decode_line(raw.rstrip(b"\r"))
    except ValueError as exc:
        return Malformed(0, str(exc), "")


_BLANK = object()
_ROW = itemgetter(*COLUMNS)
_WIDTH = len(COLUMNS)
_PACK = struct.Struct(f"{_WIDTH}d").pack


def _decode_into(out: Parsed, line: int, raw: bytes) -> object:
    """Decode one line; a malformed one is noted in `out`. Returns the object, or None."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        obj = _decode_slow(raw)
        if obj is _BLANK:
            return None
        if type(obj) is Malformed:
            out.malformed.append((line, obj.reason, raw[:120]))
            return None
        return obj


def parse_lines(lines: list[bytes], first: int, columns: bool = True) -> Parsed:
    """Decode complete lines. Blank lines are skipped; bad ones are kept as malformed.

    The hot loop does one decode, one key lookup and one C-level copy of the fields into a
    flat float array per train line (so no Python float outlives its line); the columns are
    strided slices of that array.
    """
    out = Parsed(first, first + len(lines) - 1)
    flat = bytearray()
    keep_step, keep_line = out.train_steps.append, out.train_lines.append
    others, loads, Error = out.others.append, orjson.loads, orjson.JSONDecodeError
    for i, raw in enumerate(lines):
        try:
            obj = loads(raw)
        except Error:
            obj = _decode_into(out, first + i, raw)
            if obj is None:
                continue
        try:
            if obj["kind"] == "train":
                step = obj["step"]
                if type(step) is int and step >= 0:
                    if columns:
                        flat += _PACK(*_ROW(obj))
                    keep_step(step)
                    keep_line(first + i)
                    continue
        except (KeyError, TypeError, IndexError, struct.error):
            pass
        others((first + i, obj, raw))
    if columns:
        values = array("d", bytes(flat))
        out.columns = {name: values[n::_WIDTH] for n, name in enumerate(COLUMNS)}
    return out


# A verdict needs only the step of each train line. msgspec decodes a whole block of lines
# into (kind, step) pairs, checking every line's JSON syntax but building nothing of the
# fields it skips, whatever the key order or separators of the writer; the lines that are not
# train records are then decoded in full. A block where this does not line up one record per
# line (a blank or malformed line, two objects on one line, a NaN token, a step that is not
# a non-negative integer) is parsed line by line instead, which is the reference behaviour.
class _KindStep(msgspec.Struct, gc=False):
    kind: str
    step: int


_LEAN = msgspec.json.Decoder(_KindStep)
_LEAN_ERRORS = (msgspec.DecodeError, RecursionError, OverflowError)
_STEP_OF, _KIND_OF = attrgetter("step"), attrgetter("kind")


def _parse_block_steps(block: bytes | memoryview, lines: list[bytes], first: int
                       ) -> Parsed | None:
    """The lean parse of a block of complete lines; None when the block must be parsed
    line by line (see above)."""
    n = len(lines)
    try:
        recs = _LEAN.decode_lines(block)
    except _LEAN_ERRORS:
        return None
    if len(recs) != n:
        return None
    try:
        steps = array("q", map(_STEP_OF, recs))
    except OverflowError:
        return None
    if n and min(steps) < 0:
        return None
    out = Parsed(first, first + n - 1)
    others = list(compress(range(n), map(ne, map(_KIND_OF, recs), repeat("train"))))
    if not others:
        out.train_steps, out.train_lines = steps, array("q", range(first, first + n))
        return out
    numbers = array("q", range(first, first + n))
    prev = 0
    for i in others:
        out.train_steps += steps[prev:i]
        out.train_lines += numbers[prev:i]
        prev = i + 1
        obj = _decode_into(out, first + i, lines[i])
        if obj is not None:
            out.others.append((first + i, obj, lines[i]))
    out.train_steps += steps[prev:]
    out.train_lines += numbers[prev:]
    return out


def parse_block(block: bytes | memoryview, lines: list[bytes], first: int,
                columns: bool = True) -> Parsed:
    """Decode complete lines, given both as one block and split (`LineCutter.block`; an
    empty block when the cutter dropped a line in it)."""
    if not columns and lines and len(block):
        lean = _parse_block_steps(block, lines, first)
        if lean is not None:
            return lean
    return parse_lines(lines, first, columns)


def apply_parsed(store: RunStore, parsed: Parsed, offset: int = 0) -> None:
    """Apply a parsed batch in line order; runs of train rows that only move forward are
    appended in bulk, anything that goes back is applied record by record. Line numbers are
    the batch's plus `offset`, within the store's current segment."""
    offset += store.line_base
    store.lines = max(store.lines, parsed.last_line + offset)
    for line, reason, raw in parsed.malformed:
        store.add_malformed(line + offset, reason, raw)
    tlines = parsed.train_lines
    start = 0
    for line, obj, raw in parsed.others:
        end = bisect_left(tlines, line, lo=start)
        _apply_train_rows(store, parsed, start, end, offset)
        start = end
        store.add_object(obj, line + offset, raw)
    _apply_train_rows(store, parsed, start, len(tlines), offset)


def _apply_train_rows(store: RunStore, parsed: Parsed, a: int, b: int, offset: int) -> None:
    if a >= b:
        return
    steps = parsed.train_steps[a:b]
    forward = (not store.steps or steps[0] > store.steps[-1]) and not any(
        map(ge, steps, steps[1:])
    )
    cols = parsed.columns
    if forward:
        store.steps.extend(steps)
        if store.has_columns and cols is not None:
            for name in COLUMNS:
                store.columns[name].extend(cols[name][a:b])
        store.records += b - a
        store.version += 1
        return
    for k in range(a, b):
        values = (cols[n][k] for n in TRAIN_FIELDS) if cols else (NAN for _ in TRAIN_FIELDS)
        t = cols["time"][k] if cols else NAN
        store.add(TrainPoint(parsed.train_steps[k], t, *values), parsed.train_lines[k] + offset)


def ingest_lines(store: RunStore, lines: list[bytes], first: int) -> None:
    """Apply a batch of complete lines (as a follower yields them) to the store."""
    if lines:
        apply_parsed(store, parse_lines(lines, first, store.has_columns))


# -- whole files -----------------------------------------------------------------------------

CHUNK = 4 << 20
PARALLEL_MIN_BYTES = 32 << 20


def iter_chunks(path: Path, chunk: int = CHUNK, start: int = 0, stop: int | None = None
                ) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        fh.seek(start)
        left = None if stop is None else stop - start
        while left is None or left > 0:
            data = fh.read(chunk if left is None else min(chunk, left))
            if not data:
                break
            if left is not None:
                left -= len(data)
            yield data


def load_lines(chunks: Iterable[bytes], store: RunStore | None = None, final: bool = False
               ) -> RunStore:
    """Read a whole log from byte chunks. A torn last line is left pending, not counted,
    unless `final` (the file is finished: a rotated segment), when it is read as a line."""
    store = store or RunStore()
    cutter = LineCutter(track=False)
    for data in chunks:
        _read_lines(store, cutter, *cutter.feed(data))
    if final:
        lines, first = cutter.flush()
        if lines:
            apply_parsed(store, parse_lines(lines, first, store.has_columns))
    if cutter.cr:
        store.notices.append(f"{store.segments[-1].name if store.segments else 'the log'}: "
                             + CR_NOTE)
    return store


def _read_lines(store: RunStore, cutter: LineCutter, lines: list[bytes], first: int,
                skipped: list[int]) -> None:
    if lines:
        apply_parsed(store, parse_block(cutter.block, lines, first, store.has_columns))
    if skipped:
        store.notices.append(cutter.skip_note(skipped))


def _parse_range(path: str, start: int, stop: int, columns: bool) -> list[Parsed]:
    """Worker: parse the complete lines in [start, stop), numbered from 1 within the range."""
    cutter, out = LineCutter(track=False), []
    for data in iter_chunks(Path(path), CHUNK, start, stop):
        lines, first, _ = cutter.feed(data)
        if lines:
            out.append(parse_block(cutter.block, lines, first, columns))
    return out


def _split_points(path: Path, size: int, parts: int) -> list[int]:
    """Byte offsets that start lines, splitting the file into `parts` ranges."""
    points = [0]
    with open(path, "rb") as fh:
        for k in range(1, parts):
            fh.seek(max(size * k // parts, points[-1]))
            fh.readline()
            points.append(min(fh.tell(), size))
    points.append(size)
    return points


def segment_chunks(path: Path, chunk: int = CHUNK) -> Iterator[bytes]:
    """The bytes of a log segment, decompressed when its name ends in .gz."""
    if path.suffix != ".gz":
        yield from iter_chunks(path, chunk)
        return
    try:
        with gzip.open(path, "rb") as fh:
            while data := fh.read(chunk):
                yield data
    except (OSError, EOFError) as exc:  # a truncated or corrupt .gz: say so, keep what was read
        raise InputError(f"{path}: cannot decompress ({exc})") from None


def load_log(path: str | Path, columns: bool = True, workers: int = 1,
             parallel_min_bytes: int = PARALLEL_MIN_BYTES, history: bool = False) -> RunStore:
    """Read a log file into a RunStore. With `history`, its rotated segments are read first
    (oldest first, .gz too), each a Segment of the store. With workers > 1 a large file is
    parsed in parallel processes (fork; only from a single-threaded caller such as the CLI)."""
    path = Path(path)
    store = RunStore(has_columns=columns)
    older = rotated_segments(path) if history else []
    for seg in older:
        check_regular(seg)
        store.begin_segment(seg.name, "rotated segment")
        load_lines(segment_chunks(seg), store, final=True)
    if older:
        store.begin_segment(path.name, "the live file")
    _load_file(store, path, columns, workers, parallel_min_bytes)
    return store


def _load_file(store: RunStore, path: Path, columns: bool, workers: int,
               parallel_min_bytes: int) -> None:
    size = check_regular(path)
    methods = multiprocessing.get_all_start_methods()
    with open(path, "rb") as fh:
        bare_cr = cr_only(fh.read(1 << 16))
    if workers <= 1 or size < parallel_min_bytes or "fork" not in methods or bare_cr:
        load_lines(iter_chunks(path), store)
        return
    # Lines that end before the last newline are complete; a torn tail stays unread.
    with open(path, "rb") as fh:
        fh.seek(max(0, size - CHUNK))
        tail = fh.read()
    complete = size - (len(tail) - tail.rfind(b"\n") - 1) if b"\n" in tail else 0
    points = _split_points(path, complete, workers)
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = [pool.submit(_parse_range, str(path), a, b, columns)
                   for a, b in zip(points, points[1:], strict=False) if b > a]
        offset = 0
        for fut in futures:
            batches = fut.result()
            for parsed in batches:
                apply_parsed(store, parsed, offset)
            if batches:
                offset += batches[-1].last_line


def default_workers() -> int:
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else (os.cpu_count() or 1)))
