"""The babysit registry: one TOML file listing every run this user launched or attached.

Writers take an exclusive fcntl lock on a sibling lock file, read, change, and replace the
file atomically, so concurrent consoles never lose or tear each other's entries; readers
need no lock (they see the old file or the new one). The file is edited in place (tomlkit),
so a comment or a key the user added to a run's table stays.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from fontaine_tui.core import tomlfile
from fontaine_tui.core.atomic import atomic_write, locked
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.readfile import read_text
from fontaine_tui.core.text import literal, require_utf8

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

if TYPE_CHECKING:
    from typing import Unpack  # 3.11+; annotations only, so 3.10 runs without it

    from tomlkit import TOMLDocument

    from fontaine_tui.core.host.pgroup import GroupMember
    from fontaine_tui.core.run.attempts import Attempt
    from fontaine_tui.core.runfolder import RunFolder


@dataclass(frozen=True, slots=True)
class Entry:
    name: str
    run_dir: str  # absolute; with host, the key
    host: str
    preset: str = ""
    preset_sha256: str = ""
    pid: int = 0  # 0: no process known
    pid_started: float = 0.0  # the process's start time, to tell a reused pid apart
    launched_at: str = ""
    status: str = "running"  # or attached, finished, stopped, killed, oom, failed, exited
    exit_code: int | None = None  # TOML has no null: absent when None
    last_step: int = 0
    poll_cadence_s: float = 2.0
    updated_at: str = ""
    job: str = ""  # a Slurm job id: the run was submitted from `host` (pid is then 0)
    # the launch target's kind (core/launch/targets/pick.py's KINDS) that holds it again;
    # "": an entry written before kinds were recorded, or attached (its fields say)
    target: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return self.host, self.run_dir

    @property
    def folder(self) -> str:
        return self.run_dir

    @property
    def state(self) -> str:
        return self.status


class EntryChanges(TypedDict, total=False):
    """Registry.update's keywords: Entry's fields but its key (run_dir, host)."""

    name: str
    preset: str
    preset_sha256: str
    pid: int
    pid_started: float
    launched_at: str
    status: str
    exit_code: int | None
    last_step: int
    poll_cadence_s: float
    updated_at: str
    job: str
    target: str


def default_path() -> Path:
    if env := os.environ.get("FONTAINE_REGISTRY"):
        return Path(env)
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(state) / "fontaine-tui" / "babysit.toml"


PID_MAX_LIMIT = 1 << 22  # Linux's largest pid_max (64-bit); a pid above it is no pid


def _pid_max() -> int:
    try:
        with open("/proc/sys/kernel/pid_max", encoding="ascii") as f:
            return max(PID_MAX_LIMIT, int(f.read().strip()))
    except (OSError, ValueError):
        return PID_MAX_LIMIT


_INT_RANGE = {
    "pid": (0, None),
    "last_step": (0, (1 << 63) - 1),
    "exit_code": (-(1 << 31), (1 << 31) - 1),
}
_FLOAT_FIELDS = ("pid_started", "poll_cadence_s")


def _shown(value: object) -> str:
    """A value read from the file, for an error line: one line, at most 40 characters."""
    text = literal(repr(value) if isinstance(value, str) else str(value))
    return text if len(text) <= 40 else text[:37] + "..."


def _int_field(name: str, value: object, where: str) -> Any:
    """An integer field in its range (exit_code may be absent: None)."""
    if name == "exit_code" and value is None:
        return value
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(f"{where}.{name}: expected an integer, not {_shown(value)}")
    low, high = _INT_RANGE[name]
    if name == "pid":
        high = _pid_max()
    assert high is not None
    if not low <= value <= high:
        raise InputError(
            f"{where}.{name}: expected an integer from {low} to {high}, not {_shown(value)}"
        )
    return value


def _seconds_field(name: str, value: object, where: str) -> Any:
    """A number of seconds >= 0, kept as a float."""
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value < 0
    ):
        raise InputError(f"{where}.{name}: expected a number of seconds >= 0, not {_shown(value)}")
    return float(value)


def _str_field(name: str, value: object, where: str) -> Any:
    """Any other field: a string."""
    if not isinstance(value, str):
        raise InputError(f"{where}.{name}: expected a string, not {_shown(value)}")
    return value


# each field's check, a string's for a field not named here
_FIELD_CHECKS: dict[str, Callable[[str, object, str], Any]] = {
    **dict.fromkeys(_INT_RANGE, _int_field),
    **dict.fromkeys(_FLOAT_FIELDS, _seconds_field),
}


def _check_field(name: str, value: object, where: str) -> Any:
    """One field's value as the entry keeps it, or an InputError naming the key and the value."""
    return _FIELD_CHECKS.get(name, _str_field)(name, value, where)


def _entry(raw: object, where: str) -> Entry:
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected a table")
    known = {f.name: f for f in fields(Entry)}
    kwargs = {k: v for k, v in raw.items() if k in known}
    missing = [k for k in ("name", "run_dir", "host") if k not in kwargs]
    if missing:
        raise InputError(f"{where}: expected name, run_dir and host ({missing[0]} is missing)")
    checked: dict[str, Any] = {k: _check_field(k, v, where) for k, v in kwargs.items()}
    return Entry(**checked)


def _same(item: object, value: object) -> bool:
    """A tomlkit value already holds `value` (same type: 1 is not 1.0 nor true)."""
    unwrap = getattr(item, "unwrap", None)
    held = unwrap() if callable(unwrap) else item
    return type(held) is type(value) and held == value


def _document(text: str | None) -> tuple[TOMLDocument, list]:
    """The registry file's document as `text` holds it, and its runs' tables.

    No file: a new document, its header saying what the file is."""
    import tomlkit

    if text is not None:
        doc = tomlkit.parse(text)
        return doc, list(doc.get("runs", []))
    doc = tomlkit.document()
    doc.add(
        tomlkit.comment("fontaine-tui babysit registry: one [[runs]] table per run. Written by")
    )
    doc.add(
        tomlkit.comment(
            "fontaine-tui (locked, atomic); safe to read, edit only when no console runs."
        )
    )
    return doc, []


def _block_table(table: Any) -> Any:
    """A run's table as a [[runs]] table: one written inline (`runs = [{...}]`) copied out."""
    import tomlkit

    if isinstance(table, tomlkit.items.Table):
        return table
    whole = tomlkit.table()
    for k, v in table.items():
        whole[k] = v
    return whole


def _fill(table: Any, e: Entry) -> None:
    """Set the entry's fields in its table, in place.

    A field now None is dropped; one the table holds already (same type, same value) is left
    as it is written."""
    for k, v in asdict(e).items():
        if v is None:
            table.pop(k, None)
        elif k not in table or not _same(table[k], v):
            table[k] = v


class Registry:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    def entries(self) -> list[Entry]:
        return self._parse(self._text())

    def _text(self) -> str | None:
        try:
            return read_text(self.path)
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{self.path}: cannot read the registry ({exc})") from None

    def _parse(self, text: str | None) -> list[Entry]:
        if text is None:
            return []
        try:
            doc = tomlfile.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"{self.path}: the registry is not valid TOML ({exc})") from None
        other = sorted(k for k in doc if k != "runs")
        if other:  # not a registry: some other file, left untouched
            raise InputError(
                f"{self.path}: {other[0]}: expected only [[runs]] tables (is this "
                "file a fontaine-tui registry? it is left untouched)"
            )
        runs = doc.get("runs", [])
        if not isinstance(runs, list):
            raise InputError(f"{self.path}: runs: expected [[runs]] tables")
        return [_entry(r, f"{self.path}: runs[{i}]") for i, r in enumerate(runs)]

    def find(self, run_dir: str | Path, host: str) -> Entry | None:
        key = (host, str(run_dir))
        return next((e for e in self.entries() if e.key == key), None)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with locked(self.lock_path):
            yield

    def _write(self, text: str | None, entries: list[Entry]) -> None:
        """Write `entries` over the file as `text` held it.

        Each run's table is edited in place (the keys it does not know, comments and layout stay),
        tables of removed runs are dropped, and new ones added."""
        import tomlkit

        doc, old = _document(text)
        tables: dict[tuple[str, str], list] = {}
        for t in old:
            tables.setdefault((str(t.get("host")), str(t.get("run_dir"))), []).append(t)
        runs = tomlkit.aot()
        for e in entries:
            same = tables.get(e.key)
            table = _block_table(same.pop(0)) if same else tomlkit.table()
            _fill(table, e)
            runs.append(table)
        if "runs" in doc:
            del doc["runs"]
        if entries:
            doc.append("runs", runs)
        atomic_write(self.path, tomlkit.dumps(doc))

    def change(self, edit: Callable[[list[Entry]], list[Entry]]) -> list[Entry]:
        """Apply `edit` to the entries under the lock and write the result."""
        with self._locked():
            text = self._text()
            entries = edit(self._parse(text))
            self._write(text, entries)
            return entries

    def upsert(self, entry: Entry) -> Entry:
        """Add the entry, or replace the one with the same (host, run_dir)."""
        for f in fields(Entry):  # the registry is UTF-8 TOML: a path that is not is refused
            value = getattr(entry, f.name)
            if isinstance(value, str):
                require_utf8(value, f"{self.path}: {f.name}")

        def edit(entries: list[Entry]) -> list[Entry]:
            rest = [e for e in entries if e.key != entry.key]
            return [*rest, entry]

        self.change(edit)
        return entry

    def update(
        self, run_dir: str | Path, host: str, **changes: Unpack[EntryChanges]
    ) -> Entry | None:
        """Change fields of one entry; None if it is not registered."""
        key = (host, str(run_dir))
        found: list[Entry] = []

        def edit(entries: list[Entry]) -> list[Entry]:
            out = []
            for e in entries:
                if e.key == key:
                    e = replace(e, **changes)
                    found.append(e)
                out.append(e)
            return out

        self.change(edit)
        return found[0] if found else None


@dataclass(frozen=True, slots=True)
class LiveStatus:
    entry: Entry
    state: str  # "running", "remote" (another host: not checked), or an exit status
    last_step: int | None  # from the log's tail; None when the folder is unreadable
    detail: str
    attempts: int | None = None  # launches and resumes in attempts.jsonl; None: not read


def live_status(entry: Entry, this_host: str) -> LiveStatus:
    """What the entry's run is doing now: its pid checked, its log's tail read."""
    from fontaine_tui.core.run import attempts
    from fontaine_tui.core.run.logtail import frozen_blind, read_tail
    from fontaine_tui.core.runfolder import RunFolder

    if entry.host != this_host:
        return LiveStatus(entry, "remote", None, f"on {entry.host}: not checked from here")
    folder = RunFolder(Path(entry.run_dir))
    if not folder.root.is_dir():
        return LiveStatus(entry, entry.status, None, f"{folder.root}: run folder is gone")
    tail = read_tail(folder)
    tried = attempts.read_attempts(folder, this_host)
    count = len(tried)
    # the trainer's words at its exit, as a blind preset's run shows them (no read judged here)
    hide = frozen_blind(folder)
    if entry.status not in ("running", "attached"):
        return _recorded_status(entry, tail.last_step, tried)
    if entry.job:
        return _job_status(entry, folder, tail.last_step, tried, hide)
    step = tail.last_step
    if not folder.log.exists():
        from fontaine_tui.core.run.attached import read_attached

        look = read_attached(entry.run_dir, entry.preset, entry.preset_sha256)
        if look is not None and not entry.pid:  # attached, no process known: its files say
            return LiveStatus(entry, look.state, look.store.last_step, look.shown(*hide), count)
        if look is not None:  # a launched [command]: its step is in its trainer's log
            step = look.store.last_step
    return _process_status(entry, folder, step, tried, hide)


def _recorded_status(entry: Entry, step: int | None, tried: list[Attempt]) -> LiveStatus:
    """A run no longer running: its status as recorded, its exit code and last attempt's cause."""
    code = "" if entry.exit_code is None else f" (exit {entry.exit_code})"
    last_cause = f"; attempt {tried[-1].number}: {tried[-1].cause}" if tried else ""
    return LiveStatus(entry, entry.status, step, f"{entry.status}{code}{last_cause}", len(tried))


def _process_status(
    entry: Entry,
    folder: RunFolder,
    step: int | None,
    tried: list[Attempt],
    hide: tuple[tuple[str, ...], bool],
) -> LiveStatus:
    """A run of ours on this host: its pid alive, else what its attempt or folder says.

    A pid gone whose attempt recorded no end is judged from its attempt's start (its
    offsets, its OOM-kill counters): what it started may run on in its process group."""
    from fontaine_tui.core.run.exits import STATUS_OF, exit_info
    from fontaine_tui.core.run.launcher import found_again, pid_alive

    count = len(tried)
    if pid_alive(entry.pid, entry.pid_started or None):
        return LiveStatus(entry, "running", step, f"pid {entry.pid} alive", count)
    last = tried[-1] if tried and tried[-1].pid == entry.pid else None
    if last is None:
        info = exit_info(folder, None)
    elif last.ended:
        return LiveStatus(
            entry,
            STATUS_OF.get(last.cause, "exited"),
            last.last_step,
            f"pid {entry.pid} gone: {last.describe(*hide)}",
            count,
        )
    else:
        found = found_again(folder, last.pid, last.pid_started, last.since, last.baseline())
        ended = found.poll()
        if ended is None:  # what it started runs on in its group
            return LiveStatus(entry, "running", step, _group_detail(entry, found.orphans), count)
        info = ended
    return LiveStatus(
        entry,
        info.status,
        info.last_step,
        f"pid {entry.pid} gone: {info.describe(*hide)}",
        count,
    )


def _group_detail(entry: Entry, orphans: Sequence[GroupMember]) -> str:
    """A run whose pid is gone, its process group running on: whether `orphans` lost it."""
    from fontaine_tui.core.host import pgroup

    if not orphans:
        return f"pid {entry.pid} alive"
    return (
        f"pid {entry.pid} is gone, but its process group lives on without its "
        f"parent ({pgroup.pids_text(orphans)})"
    )


_LOOKING: set[tuple[str, str]] = set()  # entries whose live_status is still being taken


def live_statuses(
    entries: Sequence[Entry], this_host: str, deadline_s: float
) -> dict[tuple[str, str], LiveStatus]:
    """The `live_status` of this host's entries, side by side, within `deadline_s` in all.

    A Slurm job's status asks the scheduler, which may be slow to answer. An entry not done in
    time is left out, for the caller to show from what else it has. The reads run on daemon
    threads (a hung scheduler holds neither the caller nor the exit), and an entry whose last
    read has not come back is not read again meanwhile."""
    import threading
    import time

    out: dict[tuple[str, str], LiveStatus] = {}
    threads = []
    for e in entries:
        if e.host != this_host or e.key in _LOOKING:
            continue
        _LOOKING.add(e.key)

        def look(entry: Entry = e) -> None:
            try:
                out[entry.key] = live_status(entry, this_host)
            except Exception:  # noqa: BLE001 - a row without its live state, not a crash
                pass
            finally:
                _LOOKING.discard(entry.key)

        t = threading.Thread(target=look, daemon=True, name="live-status")
        t.start()
        threads.append(t)
    deadline = time.monotonic() + deadline_s
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    return dict(out)


def _job_status(
    entry: Entry,
    folder,
    last_step: int,
    tried: list,
    hide: tuple[tuple[str, ...], bool] = ((), False),
) -> LiveStatus:
    """The status of a run submitted to Slurm.

    The scheduler says whether its job is queued, running or over. An end its attempt recorded
    is the story, else the scheduler's state and the log."""
    from fontaine_tui.core.run.exits import STATUS_OF
    from fontaine_tui.core.slurm import client as slurm_client
    from fontaine_tui.core.slurm import job as slurm_job

    job, count = entry.job, len(tried)
    state = slurm_client.query(job)
    last = tried[-1] if tried and tried[-1].job == job else None
    if state is None:
        return LiveStatus(
            entry,
            entry.status,
            last_step,
            f"slurm job {job}: the scheduler "
            "does not say (squeue, sacct and scontrol have no answer)",
            count,
        )
    if state.active:
        why = f" ({state.reason})" if state.reason and state.state == "PENDING" else ""
        return LiveStatus(entry, "running", last_step, f"slurm job {job} {state.state}{why}", count)
    if last is not None and last.ended:
        return LiveStatus(
            entry,
            STATUS_OF.get(last.cause, "exited"),
            last.last_step,
            f"slurm job {job} {state.state}: {last.describe(*hide)}",
            count,
        )
    info = slurm_job.scheduler_exit(folder, job, state, last.since if last else (0, 0))
    return LiveStatus(
        entry,
        info.status,
        info.last_step,
        f"slurm job {job} {state.state}: {info.describe(*hide)}",
        count,
    )
