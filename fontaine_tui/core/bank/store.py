"""The comparator bank: finished runs kept as canonical JSON documents, by name and sha256.

A bank folder holds one folder per name; each version of a name is `<sha256>.json` (the
sha256 of its canonical bytes, so a version never changes), and `CURRENT` names the version
a bare `NAME` means. Banking other content under a taken name needs `replace`; the old
version stays, and `NAME@<sha256 prefix>` still finds it. A put holds the name's lock
(`NAME/.lock`) from reading CURRENT to writing it, so of two banks of one name at once the
second sees the first's run and is refused (or, with `replace`, replaces it).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import statistics
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from fontaine_tui.core.atomic import atomic_write, create_new, locked
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.log.records import Meta
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.readfile import read_text, read_whole
from fontaine_tui.core.secrets import recordable
from fontaine_tui.core.text import literal

SCHEMA = "fontaine-tui/bank/1"
# a run banked although its own evidence conflicts (`bank add --even-if-conflicting`): the
# reasons, in the document (so in its sha256); a preset refuses to derive a bound from it
MARK = "conflicting_evidence"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
CURRENT = "CURRENT"
LOCK = ".lock"


def bank_dir() -> Path:
    """$FONTAINE_BANK, else $XDG_DATA_HOME/fontaine-tui/bank (~/.local/share by default)."""
    if env := os.environ.get("FONTAINE_BANK"):
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return Path(base) / "fontaine-tui" / "bank"


@contextmanager
def bank_at(root: Path) -> Iterator[None]:
    """FONTAINE_BANK names `root` for this process while inside, then what it was.

    The demo reads its comparator from a bank of its own, and `verify` the banked runs a
    bundle carries, never the user's bank."""
    old = os.environ.get("FONTAINE_BANK")
    os.environ["FONTAINE_BANK"] = str(root)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("FONTAINE_BANK", None)
        else:
            os.environ["FONTAINE_BANK"] = old


@dataclass(frozen=True)
class BankedRun:
    """One banked run: a version of a name, its sha256 and the document."""

    name: str
    sha256: str
    doc: Mapping[str, object]
    current: bool = True

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.sha256}"

    @cached_property
    def _index(self) -> dict[int, Mapping[str, object]]:
        return self._probes()

    def probes(self) -> dict[int, Mapping[str, object]]:
        """The banked probes by step: each with every number the eval record held."""
        return self._index

    def _probes(self) -> dict[int, Mapping[str, object]]:
        out: dict[int, Mapping[str, object]] = {}
        items = self.doc.get("probes")
        for p in items if isinstance(items, list) else ():
            if isinstance(p, dict) and isinstance(p.get("step"), int):
                out[p["step"]] = p
        return out

    def value(self, step: int, metric: str) -> float:
        """The banked metric (a field or a dotted path) at a probe step; NaN when absent."""
        p = self.probes().get(step)
        fields = p.get("fields") if p is not None else None
        v = fields.get(metric) if isinstance(fields, dict) else None
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan

    def keys(self) -> list[str]:
        """Every key the banked probes hold a number at, sorted."""
        held: set[str] = set()
        for p in self.probes().values():
            fields = p.get("fields")
            if isinstance(fields, dict):
                held.update(k for k, v in fields.items() if isinstance(v, (int, float)))
        return sorted(held)

    @property
    def marked(self) -> tuple[str, ...]:
        """Why the run was banked marked (its own evidence conflicts); () when it was not."""
        reasons = self.doc.get(MARK)
        return tuple(reasons) if isinstance(reasons, list) else ()

    def where(self) -> str:
        """Where the run came from, in words: host, ranks, device.

        Each is the run's meta record's; another trainer's run writes none, so its host is the
        one its prereg.json froze at launch, and what neither records is said to be so."""
        d = self.doc
        prereg = d.get("prereg")
        frozen = prereg.get("host") if isinstance(prereg, Mapping) else None
        host = d.get("host") or (frozen if isinstance(frozen, str) and frozen else "unknown host")
        ranks = d.get("world_size")
        return (
            f"banked run, {host}, "
            f"{f'{ranks} rank(s)' if ranks is not None else 'ranks not recorded'}, "
            f"{d.get('device') or 'device not recorded'}"
        )


def canonical(doc: Mapping[str, object]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def _num(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _foreign_end(store: RunStore, gate_end: int | None, finished_at: int | None) -> str:
    """How a foreign run's end is known, in words.

    Its own `end` event, else the stop a gate recorded, else its last attempt's finish that
    attempts.jsonl records, else the word of the one who banked it."""
    if store.ended_at is not None and store.events and store.events[-1].event == "end":
        return f"its log says so ({store.events[-1].detail})"
    if gate_end is not None:
        return f"attempts.jsonl says the [gates] stop_on_lock gate stopped it at step {gate_end}"
    if finished_at is not None:
        return f"attempts.jsonl says its last attempt finished at step {finished_at}"
    return "said by the one who banked it (bank --ended)"


def document(
    store: RunStore,
    source: str,
    note: str = "",
    prereg: bytes | None = None,
    foreign: str = "",
    gate_end: int | None = None,
    finished_at: int | None = None,
) -> dict[str, object]:
    """A finished run as a bank document.

    The document holds every probe (all its numbers by path, the per-dataset breakdown), a
    summary of the train curve, what the meta said it ran (recipe, world size, device, code and
    data identity) and its prereg.json, if any. The log must have ended (`event: end`), or a
    `[gates] stop_on_lock` gate stopped the run at `gate_end`, a step its log reached (as the
    verdict reads it: core/run/evidence.py's `gate_end`). Another trainer's log (`foreign`:
    its kind) says nothing of its end (unless it records one, such as a W&B run's exit), so
    attempts.jsonl says it (a launched [command] whose last attempt finished at `finished_at`),
    or else the one banking it (`bank --ended`), and the document says which."""
    recordable(note, "bank add --note")
    _refuse_unbankable(store, source, foreign, gate_end)
    doc = {
        "schema": SCHEMA,
        "source": source,
        "note": note,
        **_meta_fields(store.metas[-1] if store.metas else None),
        "probes": _probes(store),
        "train": _train_summary(store),
        "prereg": _prereg(prereg, source),
        **(
            {"format": foreign, "ended": _foreign_end(store, gate_end, finished_at)}
            if foreign
            else {}
        ),
    }
    _check_finite(doc, source)
    return doc


def _refuse_unbankable(store: RunStore, source: str, foreign: str, gate_end: int | None) -> None:
    """Refuse a run of ours not known to have ended, and a run with no probe."""
    ended = gate_end is not None or (store.events and store.events[-1].event == "end")
    if not foreign and not ended:
        raise InputError(
            f"{source}: the run has not finished (no `end` event in its log); bank it once it ends"
        )
    if not store.probes:
        raise InputError(f"{source}: no eval probe in the log: nothing to compare with")


def _meta_fields(meta: Meta | None) -> dict[str, object]:
    """What the run's last meta said it ran (recipe, world size, device, code and data identity)."""
    if meta is None:
        return {
            "run": "",
            "host": "",
            "world_size": None,
            "device": "",
            "recipe": {},
            "code": {},
            "data": {},
            "versions": {},
        }
    return {
        "run": meta.run,
        "host": meta.host,
        "world_size": meta.world_size,
        "device": meta.device,
        "recipe": dict(meta.recipe),
        "code": dict(meta.code),
        "data": dict(meta.data),
        "versions": dict(meta.versions),
    }


def _probes(store: RunStore) -> list[dict[str, object]]:
    """Every probe in step order: all its numbers by path, and the per-dataset breakdown."""
    return [
        {
            "step": step,
            "fields": {k: _num(v) for k, v in sorted(store.probes[step].fields.items())},
            "breakdown": {k: _num(v) for k, v in sorted(store.probes[step].breakdown.items())},
        }
        for step in store.probe_steps()
    ]


def _train_summary(store: RunStore) -> dict[str, object]:
    """The train curve in a few numbers: its length, its loss's first, last and lowest values."""
    loss = _finite(store, "loss")
    step_s = [x for x in _finite(store, "step_s") if x > 0]
    first, last, low = (loss[0], loss[-1], min(loss)) if loss else (None, None, None)
    return {
        "records": len(store.steps),
        "last_step": store.last_step,
        "loss_first": first,
        "loss_last": last,
        "loss_min": low,
        "step_s_median": statistics.median(step_s) if step_s else None,
    }


def _finite(store: RunStore, name: str) -> list[float]:
    """A train column's finite values (none for a log read without columns)."""
    return [x for x in store.columns[name] if math.isfinite(x)] if store.has_columns else []


def _prereg(prereg: bytes | None, source: str) -> object:
    """The run's prereg.json as JSON, or None without one; refused when it is not JSON."""
    if prereg is None:
        return None
    try:
        return json_loads(prereg)
    except (ValueError, RecursionError):
        raise InputError(f"{source}: prereg.json is not JSON; nothing was banked") from None


def _check_finite(doc: Mapping[str, object], source: str) -> None:
    """The check that a bank document holds no NaN or infinity.

    A bank document is JSON, which has no NaN or infinity. A number that is not finite in what
    the log's meta record or prereg.json says is named (file and key), and nothing is banked. A
    probe's or the train curve's non-finite value is kept as null."""
    stack: list[tuple[str, object]] = [(k, v) for k, v in doc.items()]
    while stack:
        key, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise _not_finite(source, key, value)
        stack += _children(key, value)


def _children(key: str, value: object) -> list[tuple[str, object]]:
    """A mapping's or a list's items, each under its dotted or indexed key; none for a value."""
    if isinstance(value, Mapping):
        return [(f"{key}.{k}", v) for k, v in value.items()]
    if isinstance(value, list):
        return [(f"{key}[{i}]", v) for i, v in enumerate(value)]
    return []


def _not_finite(source: str, key: str, value: float) -> InputError:
    """The refusal of a number that is not finite at `key` (`prereg.…` is prereg.json's)."""
    part, _, inner = key.partition(".")
    if part == "prereg":
        what, where = "prereg.json", inner
    else:
        what, where = "the log's meta record", key
    return InputError(
        f"{source}: {what}: {literal(where)}: {value} is not a finite "
        "number (a bank document is JSON, which has none); nothing was "
        "banked"
    )


def mark(doc: Mapping[str, object], reasons: list[str]) -> dict[str, object]:
    """`doc` marked as a run whose own evidence conflicts.

    The conflicts are `reasons`, in words. The run is banked all the same at the user's word,
    and no preset derives a bound from a marked entry."""
    return {**doc, MARK: list(reasons)}


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise InputError(
            f"--as: expected a name of letters, digits, '_', '.', '-' (at most "
            f"64, not starting with a dot), got {name!r}"
        )
    return name


def put(
    name: str, doc: Mapping[str, object], replace: bool = False, root: Path | None = None
) -> tuple[BankedRun, str]:
    """Bank `doc` under `name`.

    Returns the entry and what happened: "banked", "unchanged" (the same content is already
    current) or "replaced" (the old version is kept)."""
    root = root or bank_dir()
    check_name(name)
    data = canonical(doc)
    sha = hashlib.sha256(data).hexdigest()
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    with locked(folder / LOCK):  # (read CURRENT, write the version, CURRENT) as one step
        old = current_sha(folder)
        if old == sha:
            return BankedRun(name, sha, doc), "unchanged"
        if old is not None and not replace:
            raise InputError(
                f"bank {name}: already holds another run (sha256 {old[:12]}); "
                "pass --replace to make this one current (the old version is "
                "kept)"
            )
        try:
            create_new(folder / f"{sha}.json", data + b"\n")
        except FileExistsError:  # this content was banked before: make it current again
            pass
        atomic_write(folder / CURRENT, sha + "\n")
    return BankedRun(name, sha, doc), "banked" if old is None else "replaced"


def put_whole(
    name: str, doc: Mapping[str, object], replace: bool = False, root: Path | None = None
) -> tuple[BankedRun, str]:
    """`put`, or nothing at all left behind.

    When a write fails (a full disk, a read-only bank), what this put made (its version file, an
    empty name folder, an empty bank folder) is removed again and one InputError names the
    folder and the reason."""
    root = root or bank_dir()
    folder = root / check_name(name)
    version = folder / f"{hashlib.sha256(canonical(doc)).hexdigest()}.json"
    new = [p for p in (root, folder, folder / LOCK, version) if not os.path.lexists(p)]
    try:
        return put(name, doc, replace, root)
    except OSError as exc:
        for path in reversed(new):
            try:
                path.rmdir() if path.name != LOCK and path != version else path.unlink()
            except OSError:
                pass  # not made by this put after all, or not empty: left as it is
        raise InputError(
            f"{folder}: cannot bank ({exc.strerror or exc}); nothing was banked"
        ) from None


def current_sha(folder: Path) -> str | None:
    try:
        sha = read_text(folder / CURRENT).strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"{folder / CURRENT}: cannot read ({exc.strerror})") from None
    if not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise InputError(f"{folder / CURRENT}: expected a sha256, got {sha[:70]!r}")
    return sha


def get(ref: str, root: Path | None = None) -> BankedRun:
    """The banked entry that `ref` names, checked against its hash.

    `ref` is `NAME` (the current version) or `NAME@<sha256 prefix>` (a pinned one). The file's
    bytes must hash to its name, so an edited entry is an error, never a comparator."""
    root = root or bank_dir()
    name, _, pin = ref.partition("@")
    check_name(name)
    folder = root / name
    if not folder.is_dir():
        known = ", ".join(sorted(e.name for e in entries(root))) or "none"
        raise InputError(f"bank {name}: no such banked run in {root} (banked: {known})")
    current = current_sha(folder)
    if pin:
        sha = _pinned(ref, folder, pin)
    elif current is None:
        raise InputError(f"bank {name}: {folder / CURRENT} is missing")
    else:
        sha = current
    doc = _document(ref, folder / f"{sha}.json", sha)
    return BankedRun(name, sha, doc, current=sha == current)


def _pinned(ref: str, folder: Path, pin: str) -> str:
    """The one version whose sha256 starts with `pin` (`NAME@<prefix>`)."""
    if not re.fullmatch(r"[0-9a-f]{4,64}", pin):
        raise InputError(f"bank {ref}: expected NAME@<hex sha256 prefix>")
    found = sorted(p.stem for p in folder.glob(f"{pin}*.json"))
    if len(found) != 1:
        raise InputError(
            f"bank {ref}: {'no' if not found else 'more than one'} version "
            f"matches {pin} in {folder}"
        )
    return found[0]


def _document(ref: str, path: Path, sha: str) -> dict[str, object]:
    """A banked version's document, checked.

    Its bytes hash to `sha`, it is JSON of this schema, and its marks (if any) are reasons in
    words."""
    try:
        raw = read_whole(path)
    except FileNotFoundError:
        raise InputError(f"bank {ref}: {path} is missing") from None
    _check_unedited(path, raw, sha)
    try:
        doc = json_loads(raw)
    except ValueError:
        raise InputError(f"{path}: expected a JSON bank document") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise InputError(f"{path}: schema: expected {SCHEMA!r}")
    reasons = doc.get(MARK, ["-"])
    if not (isinstance(reasons, list) and reasons and all(isinstance(r, str) for r in reasons)):
        raise InputError(f"{path}: {MARK}: expected a list of reasons in words")
    return doc


def _check_unedited(path: Path, raw: bytes, sha: str) -> None:
    """The check that a banked file's bytes still hash to its name."""
    if hashlib.sha256(raw.rstrip(b"\n")).hexdigest() != sha:
        raise InputError(f"{path}: its content does not match its sha256 (edited); not used")


def version_bytes(entry: BankedRun, root: Path | None = None) -> bytes:
    """The bytes of the banked file `entry` was read from, checked against its sha256 again."""
    path = (root or bank_dir()) / check_name(entry.name) / f"{entry.sha256}.json"
    try:
        raw = read_whole(path)
    except OSError as exc:
        raise InputError(f"bank {entry.ref}: {path}: cannot read ({exc.strerror})") from None
    _check_unedited(path, raw, entry.sha256)
    return raw


def entries(root: Path | None = None) -> list[BankedRun]:
    """Every name's current version (unreadable ones skipped: `unusable` says why)."""
    return [e for e in _every(root) if isinstance(e, BankedRun)]


def unusable(root: Path | None = None) -> list[tuple[str, str]]:
    """The names `entries` leaves out, each with why (an edited file, a missing CURRENT)."""
    return [e for e in _every(root) if not isinstance(e, BankedRun)]


def _every(root: Path | None) -> list[BankedRun | tuple[str, str]]:
    root = root or bank_dir()
    out: list[BankedRun | tuple[str, str]] = []
    if not root.is_dir():
        return out
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        try:
            out.append(get(folder.name, root))
        except InputError as exc:
            out.append((folder.name, str(exc)))
    return out


def versions(name: str, root: Path | None = None) -> list[str]:
    folder = (root or bank_dir()) / check_name(name)
    return sorted(p.stem for p in folder.glob("*.json"))
