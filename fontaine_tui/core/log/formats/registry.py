"""Every log format this console reads, each one record (`Format`), all in one tuple (`FORMATS`).

A kind's name, its decoder, how a folder is told to hold it, the files it reads (and the one
the SSH follower follows when `[source]` names none), how it is followed, whether a folder may
hold several of its runs, how its end is known, and what `inspect` lists of a store of several
runs: the places that read a log (source.py's validation and decoder, locate.py, cold.py,
candidates.py, core/follow/foreign.py, `bank`) ask this table, never the kind's name. A new
format is a decoder module and one record here.

`FORMATS` is in the order kinds are listed (a bad `kind =`, `inspect`'s candidates); `rank`
is the order a folder is tried in by `detect` (ours first, then a launched [command]'s frozen
[source], then these, lowest first). The table is read through `formats()` and `find()` at
each call, never copied at import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import NamedTuple

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats import config as configs
from fontaine_tui.core.log.formats import where
from fontaine_tui.core.log.formats.base import Decoder
from fontaine_tui.core.log.formats.eventdirs import EVENTS
from fontaine_tui.core.log.formats.mlflow import (
    FILE_STORE,
    SQLITE_STORE,
    MlflowDecoder,
    connect,
    file_store_runs,
    is_file_store,
    run_rows,
    snapshot_rows,
    sqlite_runs,
    store_files,
)
from fontaine_tui.core.log.formats.printed import LinesDecoder
from fontaine_tui.core.log.formats.rows import (
    CsvDecoder,
    FormatError,
    JsonlDecoder,
    TrainerStateDecoder,
)
from fontaine_tui.core.log.formats.spec import SourceSpec
from fontaine_tui.core.log.formats.tensorboard import TensorBoardDecoder
from fontaine_tui.core.log.formats.trackio import DB_EXT, TrackioDecoder
from fontaine_tui.core.log.formats.trackio import run_rows as trackio_rows
from fontaine_tui.core.log.formats.wandb import WandbDecoder
from fontaine_tui.core.log.records import Record
from fontaine_tui.core.runfolder import ENGINE_OUT, LOG

# how a kind is followed live (core/follow/foreign.py)
APPENDED = "appended"  # bytes added at the end: each file decoded from its own offset
REWRITTEN = "rewritten"  # rewritten in place: the whole file again at each change
NEWEST = "newest"  # rewritten in place, its file looked up again at each read (a checkpoint's)
STORE = "store"  # a store read whole (`Format.store`) when its files' sizes or times move
EVENTS_DIRS = "events"  # event files of a folder and its sub-folders (eventrun.py)

# how a run's end is known
BY_READ = "read"  # its final read: nothing in the log says it ended
BY_RECORD = "record"  # an exit record in the log (W&B's)
BY_STATUS = "status"  # the store's run status, read on its own host (MLflow)


class StoreRead(NamedTuple):
    """One whole read of a store's chosen run."""

    records: list[Record]
    detail: str  # the run read, in words ("MLflow run 'r' (1f2e...)")
    same: object  # equal between two reads that found the same rows
    stamped: Callable[[], list[Path]]  # the files a write to the run changes, listed anew


@dataclass(frozen=True, slots=True)
class Store:
    """A store read whole (SQLite, MLflow's file store), not a file's bytes."""

    read: Callable[[Path, Mapping[str, str], Decoder], StoreRead]
    local_only: str  # why it is not followed over SSH, in words
    # over SSH: the transport's method that sends a snapshot of the store ("": read on its own
    # host only), the records a snapshot makes, and whether a path is read that way
    via: str = ""
    snapshot: (
        Callable[[Mapping[str, object], str, Mapping[str, str], Decoder], list[Record]] | None
    ) = None
    over_ssh: Callable[[str], bool] = lambda path: True


@dataclass(frozen=True, slots=True)
class Format:
    name: str  # the [source] kind
    files: Callable[[Path, SourceSpec, Path], list[Path]]  # (run folder, spec, base): in order
    decoder: Callable[[SourceSpec], Decoder] | None = None  # None: the log wing's own reader
    detect: Callable[[Path], bool] | None = None  # whether a folder holds a run of it
    rank: int = 100  # detect's order, lowest first
    expected: tuple[str, ...] = ()  # what detect looks for, in words
    names: tuple[str, ...] = ()  # a file named alone that is of this kind (fnmatch patterns)
    remote: str = ""  # the file (or store) followed over SSH when [source] path names none
    follow: str = APPENDED
    several: bool = False  # a folder may hold several runs ([source] run picks one)
    ends: str = BY_READ
    store: Store | None = None
    # inspect: the runs of a store of several, (run, words), [] when it holds one
    inspect_runs: Callable[[Path], list[tuple[str, str]]] | None = None
    # the run's config as it recorded it (config.py), None where the kind records none
    config: Callable[[Path, SourceSpec], configs.RunConfig] | None = None


def _mlflow_read(path: Path, options: Mapping[str, str], dec: Decoder) -> StoreRead:
    assert isinstance(dec, MlflowDecoder)
    info, rows = run_rows(path, options)
    records = dec.feed_rows(rows, info.status, info.end_ms)
    same = (tuple(rows), info.status)
    return StoreRead(
        records, f"MLflow run {info.describe()}", same, partial(store_files, path, info)
    )


def _mlflow_snapshot(
    doc: Mapping[str, object], where_: str, options: Mapping[str, str], dec: Decoder
) -> list[Record]:
    assert isinstance(dec, MlflowDecoder)
    return dec.feed_rows(snapshot_rows(doc, where_, options)[1])


def _mlflow_runs(store: Path) -> list[tuple[str, str]]:
    """The runs of an MLflow store ((id, words)); [] when it cannot be read (the read says)."""
    try:
        if is_file_store(store):
            runs = file_store_runs(store)
        else:
            db = connect(store)
            try:
                runs = sqlite_runs(db)
            finally:
                db.close()
    except (FormatError, OSError, InputError):
        return []
    return [(r.run_id, f"MLflow run {r.describe()}") for r in runs]


def _trackio_read(path: Path, options: Mapping[str, str], dec: Decoder) -> StoreRead:
    assert isinstance(dec, TrackioDecoder)
    run, rows = trackio_rows(path, options)
    journals = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-journal")]
    return StoreRead(
        dec.feed_rows(rows), f"trackio run {run.describe()}", tuple(rows), journals.copy
    )


FORMATS: tuple[Format, ...] = (
    Format("fontaine", where.our_log, expected=(LOG,), config=configs.ours),
    Format(
        "tensorboard",
        where.event_paths,
        lambda s: TensorBoardDecoder(s.fields),
        where.has_events,
        rank=2,
        expected=(f"{EVENTS}*",),
        names=(f"{EVENTS}*",),
        follow=EVENTS_DIRS,
        several=True,
    ),
    Format(
        "hf_trainer",
        where.trainer_state,
        lambda s: TrainerStateDecoder(s.fields),
        where.trainer_state_here,
        rank=3,
        expected=(where.HF_STATE,),
        names=(where.HF_STATE,),
        remote=where.HF_STATE,
        follow=NEWEST,
        config=configs.hf_trainer,
    ),
    Format(
        "csv",
        where.csv_file,
        lambda s: CsvDecoder(s.fields),
        where.has_csv,
        rank=6,
        expected=(where.CSV_NAME,),
        names=(where.CSV_NAME,),
        remote=where.CSV_NAME,
        follow=REWRITTEN,
        config=configs.lightning,
    ),
    Format(
        "mlflow",
        where.mlflow_store,
        lambda s: MlflowDecoder(s.fields),
        where.has_mlflow,
        rank=4,
        expected=(f"{FILE_STORE}/", SQLITE_STORE),
        remote=SQLITE_STORE,
        follow=STORE,
        several=True,
        ends=BY_STATUS,
        store=Store(
            _mlflow_read,
            "an MLflow file store (mlruns/) is read on its own host only: attach there, "
            "or use the SQLite store",
            "mlflow_snapshot",
            _mlflow_snapshot,
            lambda path: not path.endswith(FILE_STORE),
        ),
        inspect_runs=_mlflow_runs,
        config=configs.mlflow_run,
    ),
    Format(
        "jsonl",
        where.jsonl_file,
        lambda s: JsonlDecoder(s.fields),
        where.has_one_jsonl,
        rank=7,
    ),
    Format(
        "wandb",
        where.wandb_file,
        lambda s: WandbDecoder(s.fields),
        where.has_wandb,
        rank=1,
        expected=(f"{where.WANDB}/",),
        names=("run-?*.wandb",),
        several=True,
        ends=BY_RECORD,
        config=configs.wandb_run,
    ),
    Format(
        "trackio",
        where.trackio_store,
        lambda s: TrackioDecoder(s.fields),
        where.has_trackio,
        rank=5,
        expected=(f"a trackio <project>{DB_EXT}",),
        follow=STORE,
        several=True,
        store=Store(_trackio_read, "a trackio store is read on its own host only: attach there"),
        config=configs.trackio_run,
    ),
    Format(
        "lines",
        where.printed_lines,
        lambda s: LinesDecoder(s.fields, s.patterns),
        remote=ENGINE_OUT,
    ),
)


def formats() -> tuple[Format, ...]:
    """Every format, in the order kinds are listed."""
    return FORMATS


def find(kind: str) -> Format | None:
    """The format of a [source] kind, or None for a kind no record names."""
    return next((f for f in FORMATS if f.name == kind), None)


def kinds() -> tuple[str, ...]:
    """Every [source] kind, in the order they are listed."""
    return tuple(f.name for f in FORMATS)


def several_runs() -> tuple[str, ...]:
    """The kinds whose folder (or store) may hold several runs, [source] run choosing one."""
    return tuple(f.name for f in FORMATS if f.several)
