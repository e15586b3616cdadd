"""Every input from outside, read within a named bound: the one module that owns the limits.

A hostile or broken input must never hold the program or fill its memory: a JSON text nested
some thousands of levels deep, a rotated `.gz` segment that decompresses to gigabytes of
newlines, an SQLite store whose `metrics` is a view that recurses for ever, a pattern such as
`(a|aa)+b` that backtracks without end. Each kind of input has one opener here, with a named
bound; each refusal is one line (InputError, or ValueError for a caller that words it), and
every bound is a row of `LIMITS`, which the docs' limits table repeats and the suite checks.

- JSON (`json_loads`, `check_depth`, `too_deep`): every JSON file the program reads
  (prereg.json, the ledgers and their heads, attempts.jsonl, MANIFEST.json, a log's lines,
  those a bulk decoder read too) nests at most `JSON_DEPTH` levels.
- gzip (`gunzip_chunks`, `gunzip`): a rotated segment decompresses to at most
  `gz_limit()` bytes, and runs of blank lines cost one line each.
- SQLite (`open_sqlite`): opened read-only, views, virtual tables and virtual generated
  columns refused (each runs a query or computes values of its own on every read), each statement
  within `SQLITE_BUDGET_S` and, with its sort's temporary space kept in memory, within
  `SQLITE_HEAP`, a writer's lock waited for at most `SQLITE_BUSY_S`. A store read on another
  host is opened there by the same code (`sqlite_guard_source`), its refusals said here.
- YAML (`yaml_loads`): a run's config file (Lightning's hparams.yaml, W&B's config.yaml),
  read by PyYAML's safe loader, at most `CONFIG_BYTES` long (its reader's bound), nested at most
  `CONFIG_DEPTH` levels, aliases refused, a tag it does not know read as the value it tags.
- Patterns (`UserPattern`): a pattern the user wrote (a preset's printed-lines patterns, the
  metric browser's filter) is at most `PATTERN_CHARS` long (and a preset's or a
  `--patterns` file's at most `PATTERN_COUNT` in all), its groups nest at most
  `PATTERN_DEPTH` deep, its counted repeats nest to at most `PATTERN_REPEATS` (the `regex`
  module's compile grows with their product), and each search it makes runs within a time
  budget.

Only this module imports `gzip`, `sqlite3`, `regex` and `yaml` (an import-linter contract in
pyproject.toml holds it): a new reader cannot open one of them without its bound.

Its size: one module over some 700 lines, as the bounds are one concept: every open of a
bounded format, the SQLite checks sent to another host included.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import sqlite3
import stat
import textwrap
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import regex
import yaml

from fontaine_tui.core import readfile
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.tomlfile import MAX_DEPTH as TOML_DEPTH

GZ_BYTES = 256 * 2**20  # bytes one .gz segment decompresses to, at most
GZ_ENV = "FONTAINE_GZ_LIMIT"  # another limit, in bytes
JSON_DEPTH = 64  # arrays and objects inside each other in one JSON text
SQLITE_BUDGET_S = 60.0  # one SQLite statement's time, past which it is interrupted
SQLITE_BUSY_S = 0.5  # the wait for another process's lock on an SQLite store
SQLITE_HEAP = 1024 * 2**20  # bytes SQLite may hold for this process (a sort's space included)
PATTERN_CHARS = 2000  # characters in one user pattern
PATTERN_REPEATS = 100_000  # the product of a pattern's nested counted repeats ({n}, {m,n})
PATTERN_COUNT = 100  # patterns in one [source] patterns or one inspect --patterns file
PATTERN_FILE_BYTES = 2**20  # bytes of one inspect --patterns file
PATTERN_DEPTH = 100  # groups nested in one user pattern (the parsers recurse on each)
PATTERN_BUDGET_S = 0.25  # one search of one user pattern in one line or name
PATTERN_SLOW_S = 1.0  # a pattern's slow searches (over 1 ms of CPU each) summed over one read
FILTER_BUDGET_S = 0.2  # the metric filter's compile and searches over all the names
CONFIG_BYTES = 4 * 2**20  # bytes of one run config file (hparams.yaml, trainer_state.json)
CONFIG_DEPTH = 32  # mappings and lists nested in one config file

# the sqlite3 names a reader needs, so that only this module imports sqlite3
Connection = sqlite3.Connection
SqliteError = sqlite3.Error


@dataclass(frozen=True)
class Limit:
    """One named bound on input from outside."""

    name: str  # the constant (or function) that holds it
    value: str  # its value, as the docs show it
    bounds: str  # what it bounds
    hostile: str  # the input that tests it


LIMITS: tuple[Limit, ...] = (
    Limit(
        "readfile.LIMIT",
        f"{readfile.LIMIT // 2**20} MiB (${readfile.LIMIT_ENV})",
        "bytes read whole from one file",
        "a file of many gigabytes, /dev/zero or a FIFO in place of a log",
    ),
    Limit(
        "GZ_BYTES",
        f"{GZ_BYTES // 2**20} MiB (${GZ_ENV})",
        "bytes one rotated .gz segment decompresses to",
        "a 1 MiB .gz of a gigabyte of newlines (a gzip bomb)",
    ),
    Limit(
        "JSON_DEPTH",
        str(JSON_DEPTH),
        "arrays and objects nested in one JSON text (log lines, prereg.json, ledgers, "
        "attempts.jsonl, MANIFEST.json)",
        "a line of 5,000 nested arrays",
    ),
    Limit(
        "tomlfile.MAX_DEPTH",
        str(TOML_DEPTH),
        "tables, arrays and dotted-key parts nested in one TOML file",
        "a preset of 10,000 nested arrays",
    ),
    Limit(
        "SQLITE_BUDGET_S",
        f"{SQLITE_BUDGET_S:g} s",
        "one statement on an MLflow or trackio SQLite store (opened read-only; views, virtual "
        "tables and virtual generated columns refused)",
        "a store whose `metrics` is a view that recurses for ever; one whose `metrics.key` is "
        "a virtual generated column of 300 MB a row",
    ),
    Limit(
        "SQLITE_HEAP",
        f"{SQLITE_HEAP // 2**20} MiB",
        "memory SQLite holds for one process's reads of MLflow or trackio stores, a sort's "
        "temporary space included (kept in memory, never in temporary files)",
        "40 rows of 1 MiB keys sorted by key, under an 8 MiB bound",
    ),
    Limit(
        "SQLITE_BUSY_S",
        f"{SQLITE_BUSY_S:g} s",
        "the wait for another process's lock on an SQLite store, before it is said locked",
        "a store another process holds under BEGIN EXCLUSIVE",
    ),
    Limit(
        "PATTERN_CHARS",
        str(PATTERN_CHARS),
        "characters in one user pattern ([source] patterns, the metric filter)",
        "a pattern of 100,000 characters",
    ),
    Limit(
        "PATTERN_COUNT",
        str(PATTERN_COUNT),
        "patterns in one [source] patterns or one inspect --patterns file (each line of a "
        "printed log is searched by each)",
        "3,000 patterns; /dev/zero or a FIFO as the --patterns file",
    ),
    Limit(
        "PATTERN_FILE_BYTES",
        f"{PATTERN_FILE_BYTES // 2**20} MiB",
        "bytes of one inspect --patterns file (a regular file only)",
        "a patterns file of over 1 MiB",
    ),
    Limit(
        "PATTERN_DEPTH",
        str(PATTERN_DEPTH),
        "groups nested in one user pattern",
        "900 nested groups, ((((…))))",
    ),
    Limit(
        "PATTERN_REPEATS",
        f"{PATTERN_REPEATS:,}",
        "the product of one pattern's nested counted repeats",
        "((a{1000}){1000}){1000}",
    ),
    Limit(
        "PATTERN_BUDGET_S",
        f"{PATTERN_BUDGET_S:g} s",
        "one search of a user pattern in one line or name",
        "(a\\|aa)+b on a line of 40 a's",
    ),
    Limit(
        "PATTERN_SLOW_S",
        f"{PATTERN_SLOW_S:g} s",
        "the CPU time of a pattern's searches over 1 ms each, summed over one read of a "
        "printed log (its own cost: a busy host's waits are not counted)",
        "(a\\|aa)+b on 1,000 lines of 24 a's, each search under its own budget",
    ),
    Limit(
        "CONFIG_BYTES",
        f"{CONFIG_BYTES // 2**20} MiB",
        "bytes of one run config file the config mode reads (hparams.yaml, W&B's config.yaml, "
        "trainer_state.json, prereg.json, an MLflow param)",
        "an hparams.yaml of 5 MiB",
    ),
    Limit(
        "CONFIG_DEPTH",
        str(CONFIG_DEPTH),
        "mappings and lists nested in one run config (YAML aliases refused: each would "
        "repeat what it names)",
        "an hparams.yaml of 40 nested mappings; a YAML alias bomb",
    ),
    Limit(
        "FILTER_BUDGET_S",
        f"{FILTER_BUDGET_S:g} s",
        "the metric browser's filter over all of a run's names, its compile included",
        "(a\\|aa)+b against 200 names of 40 a's",
    ),
)


# -- JSON ------------------------------------------------------------------------------


def _too_deep() -> ValueError:
    return ValueError(f"nested too deep: more than {JSON_DEPTH} levels of arrays and objects")


def check_depth(obj: object, most: int = JSON_DEPTH) -> None:
    """ValueError when a parsed JSON value nests more than `most` levels (no recursion)."""
    level = [(obj, 1)]
    while level:
        value, depth = level.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value  # type: ignore[assignment]
        else:
            continue
        if depth > most:
            raise _too_deep()
        level.extend((v, depth + 1) for v in children if isinstance(v, (dict, list)))


def brackets(raw: bytes | str) -> int:
    """The opening brackets in a JSON text: one nested past JSON_DEPTH holds more than that.

    Many texts hold no "[" at all, which a search (memchr) finds faster than a count."""
    if isinstance(raw, str):
        return raw.count("{") + (raw.count("[") if "[" in raw else 0)
    return raw.count(b"{") + (raw.count(b"[") if b"[" in raw else 0)


def too_deep(raw: bytes | str, obj: object) -> str:
    """Why `obj`, decoded from the JSON text `raw`, nests past JSON_DEPTH ("" when it does not).

    For a reader that decodes with a decoder of its own (a log's lines in bulk): the reason is
    the one `json_loads` gives. A text with few brackets cannot be deep, so only the others
    are walked."""
    if brackets(raw) <= JSON_DEPTH:
        return ""
    try:
        check_depth(obj)
    except ValueError as exc:
        return str(exc)
    return ""


def json_loads(raw: bytes | str) -> Any:  # as json.loads: the caller checks its shape
    """One JSON text, nested at most JSON_DEPTH levels; ValueError with a short reason.

    NaN and Infinity tokens, and integers past 64 bits, are read (Python's json writes them).
    A text with few brackets cannot be deep, so only the others are walked."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        # NaN/Infinity tokens, integers past 64 bits, nesting past orjson's own limit
        try:
            obj = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"not JSON ({str(exc).split(':')[0]})") from None
        except RecursionError:
            raise _too_deep() from None
    if why := too_deep(raw, obj):
        raise ValueError(why)
    return obj


# -- YAML ------------------------------------------------------------------------------


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with each node's depth bounded and aliases refused.

    A tag it does not know (Lightning writes `!!python/tuple` for a tuple) is read as the
    value it tags, a list, a mapping or a string: nothing is constructed from it."""

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            raise ValueError("it uses a YAML alias (&anchor, *alias): refused")
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > CONFIG_DEPTH:
                raise ValueError(f"nested too deep: more than {CONFIG_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _untagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> object:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


_BoundedLoader.add_multi_constructor("", _untagged)
_BoundedLoader.add_multi_constructor("tag:yaml.org,2002:python/", _untagged)


def yaml_loads(raw: bytes) -> Any:  # as yaml.safe_load: the caller checks its shape
    """One YAML document, nested at most CONFIG_DEPTH levels, no alias; ValueError says why."""
    try:
        return yaml.load(raw, Loader=_BoundedLoader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"not YAML ({first})") from None


# -- gzip ------------------------------------------------------------------------------


def gz_limit() -> int:
    """The most bytes one .gz segment may decompress to.

    $FONTAINE_GZ_LIMIT, else GZ_BYTES, never more than the whole-file read limit."""
    raw = os.environ.get(GZ_ENV, "")
    try:
        value = int(raw) if raw else GZ_BYTES
    except ValueError:
        raise InputError(f"{GZ_ENV}: expected a number of bytes, got {raw[:40]!r}") from None
    if value <= 0:
        raise InputError(f"{GZ_ENV}: expected a positive number of bytes, got {value}")
    return min(value, readfile.limit())


def _gz_too_big(where: str | Path, most: int) -> InputError:
    return InputError(
        f"{where}: decompresses to more than {most} bytes (${GZ_ENV} sets another limit); refused"
    )


def squeeze(data: bytes) -> bytes:
    """`data` with each run of blank lines made one (a blank line is skipped anyway).

    A chunk of white space alone is one newline. Otherwise each pass halves every run of
    newlines (or bare CRs, which a reader also takes for line ends), at the speed of
    bytes.replace: a line's own CR before its newline goes too, which the reader strips
    anyway, and so do the spaces before a newline (a few passes: each takes one)."""
    if not data.strip():
        return b"\n" if b"\n" in data or b"\r" in data else data
    if b"\r" in data:
        if b"\r\n" in data:
            data = data.replace(b"\r\n", b"\n")
        while b"\r\r" in data:
            data = data.replace(b"\r\r", b"\r")
    for _ in range(8):
        if b" \n" not in data:
            break
        data = data.replace(b" \n", b"\n")
    while b"\n\n" in data:
        data = data.replace(b"\n\n", b"\n")
    return data


def gunzip_chunks(raw: BinaryIO, where: str | Path, chunk: int) -> Iterator[bytes]:
    """The decompressed bytes of a gzip stream, at most `gz_limit()` of them.

    Its members come one after another; runs of blank lines come out as one newline.
    InputError (naming `where`) past the bound, or for a stream that cannot be decompressed
    (what came before it was given)."""
    most, seen = gz_limit(), 0
    try:
        for out in _inflated(raw, where, chunk):
            seen += len(out)
            if seen > most:
                raise _gz_too_big(where, most)
            if out:
                yield squeeze(out)
    except zlib.error as exc:
        raise InputError(f"{where}: cannot decompress ({exc})") from None


def _inflated(raw: BinaryIO, where: str | Path, chunk: int) -> Iterator[bytes]:
    """A gzip stream's members inflated one after another, at most `chunk` bytes a piece.

    A piece may be empty. InputError (naming `where`) for a member that ends early; a
    zlib.error for one that cannot be decompressed."""
    inflate, started = zlib.decompressobj(wbits=31), False
    while data := raw.read(2**16):
        while data:
            started = True
            out = inflate.decompress(data, chunk)
            yield out
            if inflate.eof:  # the next member, if any (zeros after the last: padding)
                data = inflate.unused_data.lstrip(b"\0")
                inflate, started = zlib.decompressobj(wbits=31), False
            elif not (data := inflate.unconsumed_tail) and len(out) == chunk:
                data = b""  # output may be pending: ask again with no input
                yield from _pending(inflate, chunk)
    if started and not inflate.eof:
        raise InputError(f"{where}: cannot decompress (the stream ends early)")


def _pending(inflate: zlib._Decompress, chunk: int) -> Iterator[bytes]:
    """What an inflater still holds when its input is spent, `chunk` bytes a piece."""
    while out := inflate.decompress(b"", chunk):
        yield out


def gunzip(data: bytes, where: str | Path) -> bytes:
    """A whole gzip file's bytes decompressed, as `gunzip_chunks` bounds them."""
    import io

    return b"".join(gunzip_chunks(io.BytesIO(data), where, 2**20))


# -- SQLite ----------------------------------------------------------------------------


def _over_heap() -> sqlite3.OperationalError:
    return sqlite3.OperationalError(_over_heap_text(SQLITE_HEAP))


class _Bounded(sqlite3.Cursor):
    """A cursor whose rows past SQLITE_HEAP raise sqlite3.OperationalError, not MemoryError."""

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except MemoryError:
            raise _over_heap() from None

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except MemoryError:
            raise _over_heap() from None

    def fetchmany(self, size: int | None = 1) -> list[Any]:
        try:
            return super().fetchmany(size)
        except MemoryError:
            raise _over_heap() from None

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except MemoryError:
            raise _over_heap() from None


class _Timed(sqlite3.Connection):
    """A connection whose every statement has its own time budget (the progress handler)."""

    budget_s = SQLITE_BUDGET_S
    end = 0.0

    def over(self) -> int:
        return 1 if time.monotonic() > self.end else 0

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        self.end = time.monotonic() + self.budget_s
        try:
            return self.cursor(_Bounded).execute(sql, parameters)
        except MemoryError:
            raise _over_heap() from None


def open_sqlite(path: Path, budget_s: float | None = None) -> sqlite3.Connection:
    """An SQLite store opened read-only, its views refused, each statement within a budget.

    A writer holding the store is never blocked or changed (mode=ro). A view, a virtual table
    or a virtual generated column is refused: the tables a reader asks for must be tables of stored
    values, not a query or an expression the file brings with it (a generated column can
    make each row hundreds of megabytes from a file of kilobytes). A statement past the budget
    is interrupted (sqlite3.OperationalError "interrupted"); one whose rows or sort need more
    than SQLITE_HEAP of memory stops there (sqlite3.OperationalError "out of memory"): the
    sort's temporary space is kept in memory, under that bound, never in temporary files.
    InputError, naming the file, for a store that cannot be opened or holds one of those."""
    readfile.check_file(path)  # a pipe in its place would hold SQLite's open
    found = _irregular(str(path))  # and one beside it, SQLite's hot-journal check on open
    if found is not None:
        raise InputError(f"{path}: {irregular_refusal(*found)}")
    try:
        db = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=SQLITE_BUSY_S, factory=_Timed
        )
    except sqlite3.Error as exc:
        raise InputError(f"{path}: cannot open read-only ({exc})") from None
    assert isinstance(db, _Timed)
    db.budget_s = SQLITE_BUDGET_S if budget_s is None else budget_s
    db.set_progress_handler(db.over, 1000)
    try:
        _settle(db, SQLITE_HEAP)
        why = _computed(db)
    except sqlite3.Error as exc:
        db.close()
        why = sqlite_refusal(exc) or f"not an SQLite store a reader can take ({exc})"
        raise InputError(f"{path}: {why}") from None
    if why:
        db.close()
        raise InputError(f"{path}: {why}")
    return db


# `_irregular`, `_settle`, `_computed_kind` and `_over_heap_text` are also sent to another
# host, whose reader opens a store with them (`sqlite_guard_source`): each uses only its
# arguments, os, stat and sqlite3, and carries no annotations, so that any python3 there (3.6
# on) runs it as written here.


def _irregular(path):
    """The store at `path`, or a file beside it that SQLite opens, found not a regular file.

    ("", its st_mode) for the store itself; (the file's name, its st_mode) for a rollback
    journal, a WAL or its shared-memory index (-journal, -wal, -shm) beside the store as
    named or as its links resolve, which SQLite opens on every open (its hot-journal check):
    an open of a FIFO there waits for a writer forever, past any budget or progress handler.
    None when each one there is a regular file. Only stat is asked: nothing is opened."""
    named = os.path.abspath(path)
    found = [("", path)]
    for base in (named, os.path.realpath(path)):
        for end in ("-journal", "-wal", "-shm"):
            beside = base + end
            near = os.path.dirname(beside) == os.path.dirname(named)
            found.append((os.path.basename(beside) if near else beside, beside))
    for said, name in found:
        try:
            mode = os.stat(name).st_mode
        except OSError:
            continue
        if not stat.S_ISREG(mode):
            return said, mode
    return None


def irregular_refusal(said: str, mode: int) -> str:
    """What to say, after the store's name, of what `_irregular` found, here or on another host.

    The store itself in readfile's words for any file that is not a regular one."""
    kind = readfile.special_kind(mode)
    if not said:
        return readfile.not_regular_words(kind)
    return (
        f"{said} beside it is not a regular file ({readfile.KINDS[kind]}); refused: "
        "SQLite opens it, and the open could wait forever"
    )


def _settle(db, heap):
    """Set what every read of a store runs under: read-only, sorts in memory, the heap bounded.

    A sort's temporary space is kept in memory, never in temporary files, so `heap` (bytes,
    SQLITE_HEAP) bounds it with all else SQLite holds for the process (a hard limit that
    only lowers one already set, never raises it)."""
    db.execute("PRAGMA query_only = ON")
    db.execute("PRAGMA temp_store = MEMORY")
    db.execute(f"PRAGMA hard_heap_limit = {int(heap)}")


def _computed_kind(db):
    """What the store computes on a read: (kind, the first few named), or None when nothing.

    Its views, its virtual tables (a module's code, rootpage 0), and its tables' virtual
    generated columns (PRAGMA table_xinfo's hidden 2: computed on each read). A stored
    generated column (hidden 3, as MLflow's own `spans.duration_ns`) was computed when its row
    was written: what is read is what the file holds. An SQLite older than generated columns
    (3.31) cannot open a store that has one (its schema does not parse there)."""
    views = [
        str(r[0]) for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'view' LIMIT 3")
    ]
    if views:
        return "view", views
    virtual = [
        str(r[0])
        for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND (rootpage = 0 OR sql LIKE 'create%virtual%table%') LIMIT 3"
        )
    ]
    if virtual:
        return "virtual table", virtual
    if sqlite3.sqlite_version_info < (3, 31):
        return None
    generated = [
        f"{r[0]}.{r[1]}"
        for r in db.execute(
            "SELECT m.name, x.name FROM sqlite_master AS m, pragma_table_xinfo(m.name) AS x "
            "WHERE m.type = 'table' AND x.hidden IN (1, 2) LIMIT 3"
        )
    ]
    if generated:
        return "virtual generated column", generated
    return None


def _over_heap_text(heap):
    """What a read past `heap` bytes says (sqlite_refusal words it)."""
    return f"out of memory: past the {int(heap)} bytes of SQLITE_HEAP"


def sqlite_guard_source() -> str:
    """The code that opens a store (`_irregular`, `_settle`, `_computed_kind`, ...), as text.

    A reader on another host (core/follow/remote.py) runs it on the store it reads, after
    `import os, sqlite3, stat`, and sends back what it refused (`irregular_refusal` words a
    file that is not a regular one, `computed_refusal` the kind and names, `sqlite_refusal_of`
    an SQLite error): a store there is held to what one here is."""
    return "".join(
        textwrap.dedent(inspect.getsource(f)) + "\n"
        for f in (_irregular, _settle, _computed_kind, _over_heap_text)
    )


def _computed(db: sqlite3.Connection) -> str:
    """Why the store computes what a read of it returns ("" when it holds stored values only)."""
    found = _computed_kind(db)
    return "" if found is None else computed_refusal(*found)


def computed_refusal(kind: str, names: list[str]) -> str:
    """What to say of a store that computes what is read (`_computed_kind`), here or there."""
    named = ", ".join(names[:3])
    if kind == "view":
        return view_refusal(names)
    if kind == "virtual table":
        return (
            f"holds a virtual table ({named}); refused: a store's tables are read, "
            "never a module's code"
        )
    if kind == "virtual generated column":
        return (
            f"holds a virtual generated column ({named}); refused: a store's stored "
            "values are read, never a value the file computes on each read"
        )
    return f"holds a {kind[:40]} ({named}); refused: a store's stored values are read"


def view_refusal(views: list[str]) -> str:
    """What to say of a store that holds views (the first few named), here or on another host."""
    return (
        f"holds a view ({', '.join(views[:3])}); refused: a store's tables are read, "
        "never a query the file brings"
    )


# a hot journal (or WAL) that a read-only connection cannot roll back (or recover)
_HOT = (sqlite3.SQLITE_READONLY_ROLLBACK, sqlite3.SQLITE_READONLY_RECOVERY)


# the code a hot rollback journal gives a read-only reader: a Python older than 3.11 gives
# no code, so core/follow/remote.py's reader on another host says this one for a "readonly"
# refusal with a journal left beside the store
SQLITE_HOT = sqlite3.SQLITE_READONLY_ROLLBACK


def sqlite_refusal(exc: sqlite3.Error) -> str:
    """What to say when the store is locked, left mid-write, or a statement ran too long.

    Locked: by another process (SQLITE_BUSY or SQLITE_LOCKED), waited for SQLITE_BUSY_S.
    Left mid-write: a writer stopped inside a transaction and left its rollback journal (or
    its WAL) hot; a read-only reader cannot roll it back, and SQLite says only "attempt to
    write a readonly database". "" for any other error."""
    return sqlite_refusal_of(getattr(exc, "sqlite_errorcode", None), str(exc))


def sqlite_refusal_of(code: int | None, message: str) -> str:
    """sqlite_refusal from an SQLite error's extended code and message.

    An error raised by a reader on another host (core/follow/remote.py) is said here as
    one raised here is."""
    if code in (5, 6) or "locked" in message:
        return f"locked by another process ({message}); try again when the writer lets go"
    if code in _HOT:
        return (
            "has an unfinished write (a hot journal, left by a writer stopped mid-transaction) "
            "that only a writer can roll back; wait for the writer, or open it once, as its "
            "owner, with mlflow or the sqlite3 shell"
        )
    if "interrupted" in message:
        return f"a read took more than {SQLITE_BUDGET_S:g} s and was stopped; refused"
    if "out of memory" in message:
        return (
            f"a read needs more than {SQLITE_HEAP // 2**20} MiB of memory (SQLITE_HEAP) and was "
            "stopped; refused"
        )
    return ""


# -- user patterns ---------------------------------------------------------------------

_MAXREPEAT = 2**32 - 1  # sre's "no upper bound"


_REPEAT_OPS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})


def _present_branches(arg: Any) -> list[Any]:
    """A conditional group's branches (`(?(1)yes|no)`), the missing `no` left out."""
    return [b for b in arg[1:] if b is not None]


# where each op that holds patterns, other than a repeat, keeps them in its argument
_HELD: dict[str, Callable[[Any], Iterable[Any]]] = {
    "SUBPATTERN": lambda arg: [arg[-1]],
    "ATOMIC_GROUP": lambda arg: [arg],
    "BRANCH": lambda arg: arg[1],
    "ASSERT": lambda arg: [arg[1]],
    "ASSERT_NOT": lambda arg: [arg[1]],
    "GROUPREF_EXISTS": _present_branches,
}


def _repeats(items: object) -> int:
    """The cost of a parsed pattern's counted repeats (what `regex`'s compile grows with).

    Each repeat's count times the counts of those it sits in, summed; the patterns other ops
    hold (`_HELD`) are walked at the count they sit in."""
    total = 0
    stack = [(items, 1)]
    while stack:
        node, product = stack.pop()
        for op, arg in node:  # type: ignore[attr-defined]
            name = str(op)
            if name in _REPEAT_OPS:
                low, high, body = arg
                count = max(low, high if high < _MAXREPEAT else low, 1)
                total += product * count
                stack.append((body, product * count))
            elif name in _HELD:
                stack.extend((inner, product) for inner in _HELD[name](arg))
    return total


def _group_depth(text: str) -> int:
    """How deep a pattern's groups nest, counted on its text (escapes and sets skipped)."""
    depth = deepest = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i = _set_end(text, i)
        elif ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth = max(depth - 1, 0)
        i += 1
    return deepest


def _set_end(text: str, i: int) -> int:
    """Where the set that opens at `text[i]` closes, or the text's end.

    Its `]` may stand first in it (`[]a]`, `[^]a]`)."""
    n = len(text)
    i += 1
    if i < n and text[i] == "^":
        i += 1
    if i < n and text[i] == "]":
        i += 1
    while i < n and text[i] != "]":
        i += 2 if text[i] == "\\" else 1
    return i


def _parse(text: str) -> Any:
    from re import _parser  # type: ignore[attr-defined]

    return _parser.parse(text, 0)


class PatternError(ValueError):
    """A user pattern refused: invalid, too long, too costly, or too slow on an input.

    `invalid` is set for a text that is no regular expression; str() is the reason alone."""

    def __init__(self, reason: str, invalid: bool = False) -> None:
        super().__init__(reason)
        self.invalid = invalid


class UserPattern:
    """A regular expression the user wrote, compiled and searched within the bounds.

    Python's `re` syntax (the `regex` module's VERSION0), which stops a search past its time
    budget (`re` cannot)."""

    def __init__(self, text: str, ignore_case: bool = False) -> None:
        if len(text) > PATTERN_CHARS:
            raise PatternError(f"longer than {PATTERN_CHARS} characters")
        if _group_depth(text) > PATTERN_DEPTH:  # not left to the recursion limit of the day
            raise PatternError(f"its groups are nested too deep: more than {PATTERN_DEPTH}")
        try:
            parsed = _parse(text)
        except re.error as exc:
            raise PatternError(str(exc), invalid=True) from None
        except (RecursionError, OverflowError):
            raise PatternError("nested too deep to compile") from None
        if _repeats(parsed) > PATTERN_REPEATS:
            raise PatternError(
                f"its counted repeats nest to more than {PATTERN_REPEATS:,} (compiling it "
                "would take minutes)"
            )
        flags = regex.VERSION0 | (regex.IGNORECASE if ignore_case else 0)
        try:
            self.compiled = regex.compile(text, flags)
        except regex.error as exc:
            raise PatternError(str(exc), invalid=True) from None
        except (RecursionError, OverflowError):
            raise PatternError("nested too deep to compile") from None
        self.text = text
        self.groupindex = dict(self.compiled.groupindex)
        self.slow_s = 0.0  # the CPU time of its searches over 1 ms, summed
        self.timed = False  # each search's CPU time is taken (once one took over 1 ms)

    def search(self, text: str, budget_s: float = PATTERN_BUDGET_S) -> regex.Match[str] | None:
        """The first match in `text`; PatternError past `budget_s` (0 or less: at once)."""
        if budget_s <= 0:
            raise PatternError(self.too_slow())
        # What counts is the pattern's own cost: the CPU time this thread spent searching, which
        # a busy host's preemptions do not add to (they do to the wall time). That clock costs
        # a system call, so it is read only once a search's wall time has crossed 1 ms; the
        # searches before are under 1 ms of CPU each, or one at most past it, within its budget.
        start = time.perf_counter()
        cpu = time.thread_time() if self.timed else 0.0
        try:
            found = self.compiled.search(text, timeout=budget_s)
        except TimeoutError:
            raise PatternError(self.too_slow()) from None
        if time.perf_counter() - start <= 0.001:
            return found
        if not self.timed:
            self.timed = True
            return found
        took = time.thread_time() - cpu
        if took > 0.001:  # each line just under the budget still adds up: bounded in all
            self.slow_s += took
            if self.slow_s > PATTERN_SLOW_S:
                raise PatternError(
                    f"{self.text[:60]!r}: its slow searches took over {PATTERN_SLOW_S:g} s "
                    "on this log (backtracking?)"
                )
        return found

    def too_slow(self) -> str:
        return f"{self.text[:60]!r} takes too long to search (backtracking without end?)"
