"""The cold read: a foreign run's whole log read once into a `RunStore` (`load_source`).

It serves the headless verdict, bank, amend and replay. TensorBoard event files are read as columns
where they can be (`tensorboard.Columns`), else record by record as a follower reads them."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from operator import attrgetter, ge
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.base import (
    Decoder,
    Unread,
    decoder_notices,
    decoder_notices_of,
    keys_seen,
    odd_values,
)
from fontaine_tui.core.log.formats.eventdirs import (
    EventFile,
    Span,
    by_first_write,
    one_run,
    span,
)
from fontaine_tui.core.log.formats.grouper import NAN, FieldMap, Grouper, foreign_probe
from fontaine_tui.core.log.formats.kept import copies, relative
from fontaine_tui.core.log.formats.locate import event_files, files
from fontaine_tui.core.log.formats.registry import EVENTS_DIRS, find
from fontaine_tui.core.log.formats.rows import FormatError
from fontaine_tui.core.log.formats.source import SourceSpec, decoder
from fontaine_tui.core.log.formats.tensorboard import Columns, TensorBoardDecoder
from fontaine_tui.core.log.formats.tfrecord import PURGE, Framer, FramingError, ScalarEvent
from fontaine_tui.core.log.formats.wandb import WandbDecoder
from fontaine_tui.core.log.formats.where import LIST_TRIES, READ
from fontaine_tui.core.log.records import TRAIN_FIELDS, Record
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.readfile import iter_regular, read_whole

# each tag's steps, wall times and values, as tensorboard.Columns reads them
TagColumns = dict[str, tuple[array, array, array]]


@dataclass(frozen=True, slots=True)
class Loaded:
    store: RunStore
    files: tuple[Path, ...]
    kind: str
    detail: str = ""  # the MLflow run read, late values, ...
    keys: tuple[str, ...] = ()  # every key the run logged, in the order first seen

    @property
    def label(self) -> str:
        """The files read, for a report's "log ..." line."""
        shown = ", ".join(str(p) for p in self.files[:3])
        more = f" and {len(self.files) - 3} more" if len(self.files) > 3 else ""
        return f"{shown}{more} ({self.kind}{'; ' + self.detail if self.detail else ''})"

    def check_metric(self, metric: str, spec: SourceSpec) -> None:
        """InputError (file, key, what is there) when no probe of the run has `metric`."""
        if any(metric in p.fields for p in self.store.probes.values()):
            return
        evals = [k for k in self.keys if spec.fields.is_eval(k)]
        where = f"{self.files[0] if self.files else '?'}: verdict.metric"
        if metric in self.keys:
            raise InputError(
                f"{where}: {metric!r} is logged but is not an eval key (source.eval"
                f" = {list(spec.fields.eval)}): add it to [source] eval"
            )
        if not evals:
            raise InputError(
                f"{where}: no eval keys in this run (source.eval = "
                f"{list(spec.fields.eval)}; keys: {_few(self.keys)})"
            )
        raise InputError(f"{where}: no key {metric!r} in this run (eval keys: {_few(evals)})")


def _few(keys: list[str] | tuple[str, ...]) -> str:
    return ", ".join(keys[:10]) + (", ..." if len(keys) > 10 else "") if keys else "none"


def load_source(folder: Path, spec: SourceSpec) -> Loaded:
    """Every record of a foreign run, read once into a store (columns kept).

    A file listed and removed before it is read (Trainer's `save_total_limit` removes the older
    checkpoint-N/ as it saves a new one) is listed again, up to LIST_TRIES times. Event files
    (a format followed as `EVENTS_DIRS`) are read as columns where they can be."""
    fmt = find(spec.kind)
    events = fmt is not None and fmt.follow == EVENTS_DIRS
    for tries_left in range(LIST_TRIES - 1, -1, -1):
        listed, paths = _listing(folder, spec, events)
        try:
            if listed is not None:
                return _load_tensorboard(listed, spec.fields)
            return _load_listed(folder, spec, paths)
        except InputError:
            if not tries_left or all(p.exists() for p in paths):
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _listing(
    folder: Path, spec: SourceSpec, events: bool
) -> tuple[list[EventFile] | None, list[Path]]:
    """The run's files as listed now: its event files (None for another kind), and their paths."""
    if not events:
        return None, files(folder, spec)
    listed = event_files(folder, spec)
    return listed, [e.path for e in listed]


def _load_listed(folder: Path, spec: SourceSpec, paths: list[Path]) -> Loaded:
    store = RunStore()
    dec = decoder(spec)
    detail = ""
    fmt = find(spec.kind)
    try:
        if fmt is not None and fmt.store is not None:  # a store: its chosen run's rows
            read = fmt.store.read(paths[0], spec.options, dec)
            records, detail = read.records, read.detail
        else:
            records = []
            for k, path in enumerate(paths):
                if k and isinstance(dec, WandbDecoder):  # the run resumed: its next attempt
                    dec.next_file(path.parent.name)
                records += _with_kept(folder, path, dec, store)
        records += dec.finish()
        if isinstance(dec, WandbDecoder):
            detail = dec.describe()
    except (FormatError, FramingError) as exc:
        raise InputError(f"{paths[0]}: {exc}") from None
    except OSError as exc:
        raise InputError(f"{paths[0]}: cannot read ({exc.strerror or exc})") from None
    for rec in records:
        store.add(rec)
    store.notices += decoder_notices(dec, paths[0].name)
    store.odd_values = odd_values(dec)
    store.malformed_count += dec.bad_count if isinstance(dec, Unread) else 0
    return Loaded(store, tuple(paths), spec.kind, detail, tuple(keys_seen(dec)))


def _load_tensorboard(listed: list[EventFile], fields: FieldMap) -> Loaded:
    """Event files read as columns (tensorboard.Columns), then into the store in bulk.

    The train columns are appended whole where their steps only move forward, and each eval step
    is one probe. Anything else (steps that go back: a restart logged into the same folder) goes
    through the grouper record by record, as a follower reads it. Files of one folder written at
    once are several runs, and are refused (eventdirs.py)."""
    cols = Columns()
    paths = [e.path for e in listed]
    torn, spans = _read_columns(listed, cols)
    listed, spans = by_first_write(listed, spans)
    restarted = one_run(spans)
    keys = tuple(cols.by_tag)
    evals = [tag for tag in keys if fields.is_eval(tag)]
    if restarted or not _whole(cols, evals):
        return _by_records(listed, fields)
    store = RunStore()
    _add_train(store, cols.by_tag, fields)
    _add_probes(store, cols, evals)
    if cols.bad_records:
        store.notices.append(
            f"{cols.bad_records} event record(s) failed their checksum or did not decode, skipped"
        )
    store.notices += torn
    return Loaded(store, tuple(paths), "tensorboard", "", keys)


def _whole(cols: Columns, evals: list[str]) -> bool:
    """The columns go into the store as read: nothing purged, no eval step logged twice."""
    return not cols.purges and not any(_repeats(cols.by_tag[tag][0]) for tag in evals)


def _by_records(listed: list[EventFile], fields: FieldMap) -> Loaded:
    """The record-by-record read, across folders when the run logged into several."""
    if len({e.path.parent for e in listed}) > 1:
        return merged_records(listed, fields)
    return _tensorboard_records(listed, fields)


def _read_columns(listed: list[EventFile], cols: Columns) -> tuple[list[str], list[Span]]:
    """Every event file read into `cols`: the notices of torn ends, and each file's span."""
    torn: list[str] = []
    spans: list[Span] = []
    for ef in listed:
        cols.prefix = ef.prefix.encode()
        before = {tag: len(col[0]) for tag, col in cols.by_tag.items()}
        with _as_input_error(ef.path):
            tail = b""
            for chunk in iter_regular(ef.path, READ):
                data = tail + chunk if tail else chunk
                tail = data[cols.read(data) :]
        if tail:
            torn.append(_torn(ef.path, len(tail)))
        spans.append(span(ef.path, cols.by_tag, before))
    return torn, spans


@contextmanager
def _as_input_error(path: Path) -> Iterator[None]:
    """A file that cannot be read, or whose records are not framed, as an InputError naming it."""
    try:
        yield
    except FramingError as exc:
        raise InputError(f"{path}: {exc}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _add_train(store: RunStore, by_tag: TagColumns, fields: FieldMap) -> None:
    """The train tags into the store: whole columns when aligned, else record by record."""
    grouper = Grouper(fields)
    grouper.keys.update(dict.fromkeys(by_tag))
    train_of = grouper.train_map()  # source tag -> train field
    train = [(tag, name) for tag, name in train_of.items() if tag in by_tag]
    if not train:
        return
    if _aligned([by_tag[t][0] for t, _ in train]):
        _extend_train(store, by_tag, train, fields)
    else:  # steps that go back
        _group_train(store, by_tag, grouper, fields)


def _extend_train(
    store: RunStore, by_tag: TagColumns, train: list[tuple[str, str]], fields: FieldMap
) -> None:
    """Aligned train columns appended whole; every other non-eval tag by its own name."""
    steps, walls, _ = by_tag[train[0][0]]
    n = len(steps)
    store.steps.extend(steps)
    c = store.columns
    c["time"].extend(walls)
    given = {name: by_tag[tag][2] for tag, name in train}
    nan = array("d", [NAN]) * n
    for name in TRAIN_FIELDS:
        c[name].extend(given.get(name, nan))
    if "step_s" not in given:
        c["step_s"][0:n] = _step_s(steps, walls)
    for tag in by_tag:
        if not fields.is_eval(tag):
            store.extras.extend(tag, by_tag[tag][0], by_tag[tag][2])
    store.records += n
    store.version += 1


def _group_train(store: RunStore, by_tag: TagColumns, grouper: Grouper, fields: FieldMap) -> None:
    """Every non-eval value through the grouper in step order, as a follower reads them."""
    out: list[Record] = []
    rows = sorted(
        (s, w, tag, v)
        for tag, column in by_tag.items()
        if not fields.is_eval(tag)
        for s, w, v in zip(*column, strict=True)
    )
    for s, w, tag, v in rows:
        grouper.add(s, w, tag, v, out)
    grouper.flush(out)
    for rec in out:
        store.add(rec)
    store.notices += decoder_notices_of([grouper])


def _add_probes(store: RunStore, cols: Columns, evals: list[str]) -> None:
    """One probe per eval step, with every eval tag logged at it, in step order."""
    probes: dict[int, dict[str, float]] = {}
    times: dict[int, float] = {}
    for tag in evals:
        steps, walls, values = cols.by_tag[tag]
        for s, w, v in zip(steps, walls, values, strict=True):
            probes.setdefault(s, {})[tag] = v
            times.setdefault(s, w)
    for s in sorted(probes):
        store.add(foreign_probe(s, times[s], probes[s], cols.bits))


def _torn(path: Path, size: int) -> str:
    return (
        f"{path.name}: the last {size} bytes are a record not yet whole (being written, "
        "or cut short): not read"
    )


def _repeats(steps: array) -> bool:
    """A step logged twice for one tag (a restart without a purge, two writers)."""
    return len(set(steps)) != len(steps)


def _tensorboard_records(listed: list[EventFile], fields: FieldMap) -> Loaded:
    """Event files read record by record, in order, as a follower reads them.

    This is the read where a writer restarted (its purge applied, also a new file starting below
    the step the ones before it reached) or logged a step twice (a conflict when the values
    differ)."""
    dec = TensorBoardDecoder(fields)
    records: list[Record] = []
    torn: list[str] = []
    paths = [e.path for e in listed]
    bad = 0
    for ef in listed:
        path = ef.path
        dec.next_file(path.name, ef.prefix)  # each its own framing, its first step checked
        try:
            records += _read_file(path, dec)
        except FramingError as exc:
            raise InputError(f"{path}: {exc}") from None
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
        bad += dec.framer.bad_records
        if dec.framer.pending:
            torn.append(_torn(path, dec.framer.pending))
    records += dec.finish()
    store = RunStore()
    for rec in records:
        store.add(rec)
    store.notices += decoder_notices(dec, paths[0].name if paths else "")
    store.odd_values = odd_values(dec)
    if bad:
        store.notices.append(
            f"{bad} event record(s) failed their checksum or did not decode, skipped"
        )
    store.notices += torn
    return Loaded(store, tuple(paths), "tensorboard", "", tuple(dec.grouper.keys))


def merged_records(listed: list[EventFile], fields: FieldMap) -> Loaded:
    """A run of several folders (add_scalars, add_hparams) whose steps go back somewhere.

    Each folder's values are taken in its files' order, and what a restart drops is taken out
    there (at a SessionLog START, or where a new file starts below the step the folder reached).
    Then every folder's values go in step order through one grouper, so that a step's keys from
    all its folders are one train record and one probe."""
    by_folder: dict[Path, list[EventFile]] = {}
    for ef in listed:
        by_folder.setdefault(ef.path.parent, []).append(ef)
    values: list[ScalarEvent] = []
    notices: list[str] = []
    bad = 0
    for found in by_folder.values():
        kept, folder_bad = _folder_values(found, notices)
        values += kept
        bad += folder_bad
    values.sort(key=attrgetter("step"))  # stable: each folder's order kept within a step
    grouper = Grouper(fields)
    out: list[Record] = []
    for sc in values:
        if sc.bits < 53:
            grouper.bits[sc.tag] = min(sc.bits, grouper.bits.get(sc.tag, 53))
        grouper.add(sc.step, sc.wall_time, sc.tag, sc.value, out)
    grouper.flush(out)
    store = RunStore()
    for rec in out:
        store.add(rec)
    store.notices += decoder_notices_of([grouper])
    if bad:
        store.notices.append(
            f"{bad} event record(s) failed their checksum or did not decode, skipped"
        )
    store.notices += notices
    return Loaded(store, tuple(e.path for e in listed), "tensorboard", "", tuple(grouper.keys))


def _folder_values(found: list[EventFile], notices: list[str]) -> tuple[list[ScalarEvent], int]:
    """One folder's values in its files' order, less what its restarts drop; and its bad records.

    A torn tail and each restart add a notice to `notices`, in the order they are met."""
    kept: list[ScalarEvent] = []
    top = -1  # the highest step kept
    bad = 0
    for ef in found:
        scalars, framer = _file_scalars(ef.path)
        bad += framer.bad_records
        if framer.pending:
            notices.append(_torn(ef.path, framer.pending))
        for k, sc in enumerate(scalars):
            if _restarts(sc, k == 0, top):
                kept, top = _restart_at(kept, sc, ef.path.name, notices)
            if sc.tag != PURGE:
                kept.append(replace(sc, tag=ef.prefix + sc.tag))
                top = max(top, sc.step)
    return kept, bad


def _file_scalars(path: Path) -> tuple[list[ScalarEvent], Framer]:
    """An event file's scalars, and the framer that read them (its bad records, a torn tail)."""
    framer = Framer()
    try:
        return [s for chunk in iter_regular(path, READ) for s in framer.feed(chunk)], framer
    except FramingError as exc:
        raise InputError(f"{path}: {exc}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _restarts(sc: ScalarEvent, first: bool, top: int) -> bool:
    """A writer restarted at `sc`: a SessionLog START at or below the step reached (`top`).

    Or a file's `first` value below it."""
    return sc.step <= top if sc.tag == PURGE else first and sc.step < top


def _restart_at(
    kept: list[ScalarEvent], sc: ScalarEvent, name: str, notices: list[str]
) -> tuple[list[ScalarEvent], int]:
    """`kept` less its values from the restart's step on, and the highest step left."""
    n = len(kept)
    kept = [x for x in kept if x.step < sc.step]
    how = "SessionLog START" if sc.tag == PURGE else "a new file below it"
    notices.append(
        f"{name}: a restart at step {sc.step} ({how}): "
        f"{n - len(kept)} value(s) from step {sc.step} on logged "
        "before it dropped, as TensorBoard drops them"
    )
    return kept, max((x.step for x in kept), default=-1)


def _aligned(columns: list[array]) -> bool:
    """The train tags share their steps, and those only move forward."""
    first = columns[0]
    return all(c == first for c in columns[1:]) and not any(map(ge, first, first[1:]))


def _step_s(steps: array, walls: array) -> array:
    """Each step's seconds since the last step with another time (NaN where not measured).

    A step sharing the last time (a writer stamping a batch of steps at once) is not
    measured; the next time that moves spans every step since (grouper.py's rule)."""
    out = array("d", [NAN]) * len(steps)
    last = 0
    for k in range(1, len(steps)):
        if not math.isfinite(walls[k]) or walls[k] == walls[last]:
            continue
        ds = steps[k] - steps[last]
        if ds > 0:
            out[k] = (walls[k] - walls[last]) / ds
        last = k
    return out


def _with_kept(folder: Path, path: Path, dec: Decoder, store: RunStore) -> list:
    """A file's records, after the rows a follower kept of it before a rewrite (kept.py).

    Each kept copy is fed to the file's decoder before the file, which reads a resume where
    a later read starts again after a step read before (base.py's `Whole`). A copy kept as
    a resume began (kept.py's `before_resume`) of a file its writer then went on with, not
    started again, is said as such."""
    rel = relative(folder, path) if dec.whole else None
    kept = copies(folder, rel) if rel is not None else []
    again = getattr(dec, "started_again", 0)
    out: list = []
    for copy in kept:
        out += dec.feed(read_whole(copy))
    out += _read_file(path, dec)
    if kept:
        named = ", ".join(str(c.relative_to(folder)) for c in kept)
        store.notices.append(
            f"{path.name} was started again by its writer: the rows read before are kept in "
            f"{named}, read first"
            if getattr(dec, "started_again", 0) > again
            else f"{path.name}: the rows kept in {named} before a resume were read first; "
            "its writer went on with the file, not started again"
        )
    return out


def _read_file(path: Path, dec: Decoder) -> list:
    """A file's records, read whole for a format read whole, else in chunks.

    A whole read is bounded (core/readfile.py). Chunks are read up to the file's size when
    opened. A pipe or a device is refused."""
    if dec.whole:
        return dec.feed(read_whole(path))
    out = []
    for chunk in iter_regular(path, READ):
        out += dec.feed(chunk)
    return out
