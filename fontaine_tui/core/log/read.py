"""Log lines and whole log files read into a `RunStore`.

A batch of lines is read as a follower yields them, parsed in one pass, with train rows straight
into columns. A whole file is read with its rotated segments first, in parallel processes when it is
large."""

from __future__ import annotations

import multiprocessing
import os
import struct
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import attrgetter, ge, itemgetter, ne
from pathlib import Path
from types import MappingProxyType
from typing import Any

import msgspec
import orjson

from fontaine_tui.core.limits import JSON_DEPTH, brackets, gunzip_chunks, squeeze, too_deep
from fontaine_tui.core.log.lines import CR_NOTE, LineCutter, cr_only
from fontaine_tui.core.log.records import (
    NAN,
    TRAIN_FIELDS,
    TRAIN_KEYS,
    Malformed,
    decode_line,
    extra_numbers,
    train_point,
)
from fontaine_tui.core.log.store import COLUMNS, RunStore
from fontaine_tui.core.readfile import iter_regular, open_regular
from fontaine_tui.core.runfolder import check_regular, rotated_segments

_NO_EXTRA: Mapping[str, float] = MappingProxyType({})

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
    # the train rows' numbers beyond the columns: (the row's index among train rows, numbers,
    # the names of those cut past records.EXTRA_KEPT)
    extras: list[tuple[int, dict[str, float], tuple[str, ...]]] = field(default_factory=list)
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
_KEYS = len(TRAIN_KEYS)  # a train line with more keys has extra numbers


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
    others, loads, Error = out.others.append, orjson.loads, orjson.JSONDecodeError
    obj: Any
    for i, raw in enumerate(lines):
        if raw[:1] == b"{":
            try:
                obj = loads(raw)
            except Error:
                obj = _decode_into(out, first + i, raw)
        elif raw.strip():  # not an object's first byte: the slow decode says what it is
            obj = _decode_into(out, first + i, raw)
        else:  # blank lines cost no decode at all (a flood of them, bare CRs or spaces, is
            continue  # read at C speed)
        if obj is None:
            continue
        try:
            if obj["kind"] == "train" and _train_row(out, flat, first + i, raw, obj, columns):
                continue
        except (KeyError, TypeError, IndexError, struct.error):
            pass
        others((first + i, obj, raw))
    if columns:
        out.columns = _strided(flat)
    return out


def _strided(flat: bytearray) -> dict[str, array]:
    """The packed train rows as columns: each a strided slice of one flat float array."""
    values = array("d", bytes(flat))
    return {name: values[n::_WIDTH] for n, name in enumerate(COLUMNS)}


def _train_row(
    out: Parsed, flat: bytearray, line: int, raw: bytes, obj: dict, columns: bool
) -> bool:
    """Take a train line as a row of the columns, or as malformed where it nests too deep.

    False where its step is not a non-negative integer: it is then read as any other line.
    Raises KeyError, TypeError or struct.error where its fields do not pack into a row."""
    step = obj["step"]
    if type(step) is not int or step < 0:
        return False
    # a row of the columns alone cannot nest (a nested field fails the pack and is read as
    # any other line): only other keys can nest, and a line nested past limits.JSON_DEPTH is
    # malformed, as every reader says it
    if (not columns or len(obj) > _KEYS) and (why := too_deep(raw, obj)):
        out.malformed.append((line, why, raw[:120]))
        return True
    if columns:
        flat += _PACK(*_ROW(obj))
        if len(obj) > _KEYS:
            cut: list[str] = []
            numbers = extra_numbers(obj, cut)
            out.extras.append((len(out.train_steps), numbers, tuple(cut)))
    out.train_steps.append(step)
    out.train_lines.append(line)
    return True


# A verdict needs only the step of each train line. msgspec decodes a whole block of lines
# into (kind, step) pairs, checking every line's JSON syntax but building nothing of the
# fields it skips, whatever the key order or separators of the writer; the lines that are not
# train records are then decoded in full. A block where this does not line up one record per
# line (a blank or malformed line, two objects on one line, a NaN token, a step that is not
# a non-negative integer, a train line that may nest past limits.JSON_DEPTH in the fields
# skipped) is parsed line by line instead, which is the reference behaviour.
class _KindStep(msgspec.Struct, gc=False):
    kind: str
    step: int


_LEAN = msgspec.json.Decoder(_KindStep)
_LEAN_ERRORS = (msgspec.DecodeError, RecursionError, OverflowError)
_STEP_OF, _KIND_OF = attrgetter("step"), attrgetter("kind")


def _parse_block_steps(block: bytes | memoryview, lines: list[bytes], first: int) -> Parsed | None:
    """The lean parse of a block of complete lines.

    Returns None when the block must be parsed line by line (see above)."""
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
    others = list(compress(range(n), map(ne, map(_KIND_OF, recs), repeat("train"))))
    if _may_nest_too_deep(block, lines, others):
        return None
    out = Parsed(first, first + n - 1)
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


def _may_nest_too_deep(block: bytes | memoryview, lines: list[bytes], others: list[int]) -> bool:
    """Whether a train line of the block holds more than JSON_DEPTH brackets (may nest past it).

    Each line is an object, so holds a bracket at least: the block's brackets less the other
    lines' bound what any one train line holds. Only past JSON_DEPTH are they counted a line
    at a time. The lines that are not train records are read in full, their depth checked."""
    train = len(lines) - len(others)
    if train == 0:
        return False
    data = block if isinstance(block, bytes) else block.tobytes()
    if brackets(data) - sum(brackets(lines[i]) for i in others) - (train - 1) <= JSON_DEPTH:
        return False
    if max(map(brackets, lines)) <= JSON_DEPTH:
        return False
    skip = set(others)
    return any(brackets(raw) > JSON_DEPTH for i, raw in enumerate(lines) if i not in skip)


def parse_block(
    block: bytes | memoryview, lines: list[bytes], first: int, columns: bool = True
) -> Parsed:
    """Decode complete lines, given both as one block and split.

    The block comes from `LineCutter.feed_block`, and is empty when the cutter dropped a line in
    it."""
    if not columns and lines and len(block):
        lean = _parse_block_steps(block, lines, first)
        if lean is not None:
            return lean
    return parse_lines(lines, first, columns)


def apply_parsed(store: RunStore, parsed: Parsed, offset: int = 0) -> None:
    """Apply a parsed batch in line order.

    Runs of train rows that only move forward are appended in bulk. Anything that goes back is
    applied record by record. Line numbers are the batch's plus `offset`, within the store's
    current segment."""
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


_Extras = list[tuple[int, dict[str, float], tuple[str, ...]]]  # Parsed.extras: (row, numbers, cut)


def _apply_train_rows(store: RunStore, parsed: Parsed, a: int, b: int, offset: int) -> None:
    """The parsed train rows a..b into the store.

    In bulk where their steps go forward from the store's, else one record at a time (the store
    says what is out of order)."""
    if a >= b:
        return
    steps = parsed.train_steps[a:b]
    forward = (not store.steps or steps[0] > store.steps[-1]) and not any(map(ge, steps, steps[1:]))
    extras = parsed.extras
    if extras and (a, b) != (0, len(parsed.train_steps)):
        extras = extras[bisect_left(extras, (a,)) : bisect_left(extras, (b,))]
    if forward:
        _extend_train(store, parsed, a, b, extras)
    else:
        _add_train_rows(store, parsed, a, b, offset, extras)


def _extend_train(store: RunStore, parsed: Parsed, a: int, b: int, extras: _Extras) -> None:
    """Train rows a..b whose steps go forward, appended to the store's columns at once."""
    cols = parsed.columns
    store.steps.extend(parsed.train_steps[a:b])
    if store.has_columns and cols is not None:
        for name in COLUMNS:
            store.columns[name].extend(cols[name][a:b])
        for k, numbers, cut in extras:
            if numbers or cut:
                store.extras.add(parsed.train_steps[k], numbers, cut)
    store.records += b - a
    store.version += 1


def _add_train_rows(
    store: RunStore,
    parsed: Parsed,
    a: int,
    b: int,
    offset: int,
    extras: _Extras,
) -> None:
    """Train rows a..b added one record at a time, as the store applies any record."""
    cols = parsed.columns
    extra = {k: (numbers, cut) for k, numbers, cut in extras}
    for k in range(a, b):
        values = [cols[n][k] for n in TRAIN_FIELDS] if cols else [NAN] * len(TRAIN_FIELDS)
        t = cols["time"][k] if cols else NAN
        more, cut = extra.get(k, (None, ()))
        rec = train_point(
            parsed.train_steps[k], t, values, MappingProxyType(more) if more else _NO_EXTRA, cut
        )
        store.add(rec, parsed.train_lines[k] + offset)


def ingest_lines(store: RunStore, lines: list[bytes], first: int) -> None:
    """Apply a batch of complete lines (as a follower yields them) to the store."""
    if lines:
        apply_parsed(store, parse_lines(lines, first, store.has_columns))


# -- whole files -----------------------------------------------------------------------------

CHUNK = 4 << 20
PARALLEL_MIN_BYTES = 32 << 20


def iter_chunks(
    path: Path, chunk: int = CHUNK, start: int = 0, stop: int | None = None
) -> Iterator[bytes]:
    """The file's bytes from `start` to `stop` (default: its size when opened).

    A pipe or a device is refused (core/readfile.py)."""
    return iter_regular(path, chunk, start, stop)


def load_lines(
    chunks: Iterable[bytes], store: RunStore | None = None, final: bool = False
) -> RunStore:
    """Read a whole log from byte chunks.

    A torn last line is left pending, not counted, unless `final` (the file is finished: a
    rotated segment), when it is read as a line."""
    store = store or RunStore()
    cutter = LineCutter(track=False)
    for data in chunks:
        _read_lines(store, cutter, *cutter.feed_block(data))
    if final:
        lines, first = cutter.flush()
        if lines:
            apply_parsed(store, parse_lines(lines, first, store.has_columns))
    if cutter.cr:
        store.notices.append(
            f"{store.segments[-1].name if store.segments else 'the log'}: " + CR_NOTE
        )
    return store


def _read_lines(
    store: RunStore,
    cutter: LineCutter,
    lines: list[bytes],
    first: int,
    skipped: list[int],
    block: bytes | memoryview,
) -> None:
    if lines:
        apply_parsed(store, parse_block(block, lines, first, store.has_columns))
    if skipped:
        store.notices.append(cutter.skip_note(skipped))


def _parse_range(path: str, start: int, stop: int, columns: bool) -> list[Parsed]:
    """Worker: parse the complete lines in [start, stop), numbered from 1 within the range."""
    cutter, out = LineCutter(track=False), []
    for data in iter_chunks(Path(path), CHUNK, start, stop):
        lines, first, _, block = cutter.feed_block(data)
        if lines:
            out.append(parse_block(block, lines, first, columns))
    return out


def _split_points(path: Path, size: int, parts: int) -> list[int]:
    """Byte offsets that start lines, splitting the file into `parts` ranges."""
    points = [0]
    with open_regular(path) as fh:
        for k in range(1, parts):
            fh.seek(max(size * k // parts, points[-1]))
            fh.readline()
            points.append(min(fh.tell(), size))
    points.append(size)
    return points


def segment_chunks(path: Path, chunk: int = CHUNK) -> Iterator[bytes]:
    """The bytes of a log segment, decompressed when its name ends in .gz."""
    if path.suffix != ".gz":  # runs of blank lines cost one line, as in a .gz (core/limits.py)
        yield from map(squeeze, iter_chunks(path, chunk))
        return
    with open_regular(path) as raw:  # a truncated or corrupt .gz: said, what was read kept
        yield from gunzip_chunks(raw, path, chunk)


def load_log(
    path: str | Path,
    columns: bool = True,
    workers: int = 1,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
    history: bool = False,
) -> RunStore:
    """Read a log file into a RunStore.

    With `history`, its rotated segments are read first (oldest first, .gz too), each a Segment
    of the store. With workers > 1 a large file is parsed in parallel processes (fork, so only
    from a single-threaded caller such as the CLI)."""
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
    torn = _unfinished(path)
    if torn:
        store.notices.append(
            f"{path.name}: the last {torn} bytes are a line without its "
            "newline (being written, or cut short): not read"
        )
    return store


def _unfinished(path: Path) -> int:
    """How many bytes follow the file's last newline (a line still being written)."""
    with open_regular(path) as fh:
        size = fh.seek(0, os.SEEK_END)
        back = min(size, CHUNK)
        fh.seek(size - back)
        tail = fh.read(back)
    cut = max(tail.rfind(b"\n"), tail.rfind(b"\r"))  # a bare-CR log ends its lines with \r
    return len(tail) - cut - 1


def _load_file(
    store: RunStore, path: Path, columns: bool, workers: int, parallel_min_bytes: int
) -> None:
    size = check_regular(path)
    methods = multiprocessing.get_all_start_methods()
    with open_regular(path) as fh:
        bare_cr = cr_only(fh.read(1 << 16))
    if workers <= 1 or size < parallel_min_bytes or "fork" not in methods or bare_cr:
        load_lines(iter_chunks(path), store)
        return
    _load_parallel(store, path, _complete_end(path, size), columns, workers)


def _complete_end(path: Path, size: int) -> int:
    """Where the file's complete lines end: past its last newline (0: none).

    Lines that end before it are complete; a torn tail stays unread."""
    with open_regular(path) as fh:
        fh.seek(max(0, size - CHUNK))
        tail = fh.read(size - max(0, size - CHUNK))
    return size - (len(tail) - tail.rfind(b"\n") - 1) if b"\n" in tail else 0


def _load_parallel(store: RunStore, path: Path, complete: int, columns: bool, workers: int) -> None:
    """The file's complete lines parsed in ranges by forked workers, applied in order."""
    points = _split_points(path, complete, workers)
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = [
            pool.submit(_parse_range, str(path), a, b, columns)
            for a, b in zip(points, points[1:], strict=False)
            if b > a
        ]
        offset = 0
        for fut in futures:
            batches = fut.result()
            for parsed in batches:
                apply_parsed(store, parsed, offset)
            if batches:
                offset += batches[-1].last_line


def default_workers() -> int:
    return max(
        1,
        min(
            4,
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else (os.cpu_count() or 1),
        ),
    )
