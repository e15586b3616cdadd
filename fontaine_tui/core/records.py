"""Log schema v1: parse `train_log.jsonl` lines into records and a columnar run store."""

from __future__ import annotations

import json
import math
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import orjson

SCHEMA = 1
KINDS = ("meta", "train", "eval", "checkpoint", "event")
TRAIN_FIELDS = ("loss", "ar_ce", "flow_loss", "lr", "grad_norm", "step_s", "data_s", "samples")
MALFORMED_KEPT = 1000  # line numbers kept for display; the count is exact beyond that
NAN = float("nan")


@dataclass(frozen=True, slots=True)
class Malformed:
    line: int
    reason: str
    text: str


@dataclass(frozen=True, slots=True)
class Meta:
    step: int
    time: float
    schema: int | None
    run: str
    world_size: int | None
    device: str
    recipe: Mapping[str, object]
    argv: tuple[str, ...]
    host: str


@dataclass(frozen=True, slots=True)
class TrainPoint:
    step: int
    time: float
    loss: float
    ar_ce: float
    flow_loss: float
    lr: float
    grad_norm: float
    step_s: float
    data_s: float
    samples: float


@dataclass(frozen=True, slots=True)
class Probe:
    step: int
    time: float
    eval_chunk_mae: float
    train_chunk_mae: float
    eval_ar_ce: float
    eval_flow_loss: float
    breakdown: Mapping[str, float]
    n_frames: int | None
    line: int = 0


@dataclass(frozen=True, slots=True)
class Checkpoint:
    step: int
    time: float
    path: str


@dataclass(frozen=True, slots=True)
class Event:
    step: int
    time: float
    event: str
    detail: str
    line: int = 0


Record = Meta | TrainPoint | Probe | Checkpoint | Event


def _num(value: object) -> float:
    """A JSON number (or NaN/Infinity) as float; anything else is NaN."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    return NAN


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def decode_line(raw: bytes) -> dict:
    """One JSON object from one line; raises ValueError with a short reason."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        # orjson rejects the NaN/Infinity tokens that Python's json writes.
        try:
            obj = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"not JSON ({str(exc).split(':')[0]})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    return obj


def _snippet(raw: bytes) -> str:
    return raw[:120].decode("utf-8", "replace")


def to_record(obj: dict, line: int = 0) -> Record | None:
    """A decoded object as a typed record; None for an unknown kind. Raises ValueError if invalid."""
    kind = obj.get("kind")
    if not isinstance(kind, str):
        raise ValueError("missing 'kind'")
    step = obj.get("step")
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ValueError("'step' is not a non-negative integer")
    t = _num(obj.get("time"))
    if kind == "train":
        return TrainPoint(step, t, *(_num(obj.get(name)) for name in TRAIN_FIELDS))
    if kind == "eval":
        raw = obj.get("breakdown")
        breakdown = (
            {str(k): _num(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
        )
        return Probe(
            step,
            t,
            _num(obj.get("eval_chunk_mae")),
            _num(obj.get("train_chunk_mae")),
            _num(obj.get("eval_ar_ce")),
            _num(obj.get("eval_flow_loss")),
            MappingProxyType(breakdown),
            _int_or_none(obj.get("n_frames")),
            line,
        )
    if kind == "event":
        return Event(step, t, _text(obj.get("event")), _text(obj.get("detail")), line)
    if kind == "checkpoint":
        return Checkpoint(step, t, _text(obj.get("path")))
    if kind == "meta":
        recipe = obj.get("recipe")
        argv = obj.get("argv")
        return Meta(
            step,
            t,
            _int_or_none(obj.get("schema")),
            _text(obj.get("run")),
            _int_or_none(obj.get("world_size")),
            _text(obj.get("device")),
            MappingProxyType(dict(recipe) if isinstance(recipe, dict) else {}),
            tuple(str(a) for a in argv) if isinstance(argv, list) else (),
            _text(obj.get("host")),
        )
    return None


def parse_line(raw: bytes, line: int = 0) -> Record | None:
    """Parse one complete line (without its newline). Raises ValueError if malformed."""
    return to_record(decode_line(raw.rstrip(b"\r")), line)


@dataclass
class RunStore:
    """Everything read from one log, train series stored as columns.

    After a resume the log repeats steps: the later record for a step wins, and the train
    series and probes of the abandoned timeline past the resume point are dropped (probes are
    kept in `superseded` so the resume stays visible).
    """

    steps: array = field(default_factory=lambda: array("q"))
    columns: dict[str, array] = field(
        default_factory=lambda: {name: array("d") for name in ("time", *TRAIN_FIELDS)}
    )
    probes: dict[int, Probe] = field(default_factory=dict)
    superseded: list[Probe] = field(default_factory=list)
    metas: list[Meta] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    malformed: list[Malformed] = field(default_factory=list)
    malformed_count: int = 0
    lines: int = 0
    records: int = 0
    ignored: int = 0
    replaced_steps: int = 0
    version: int = 0

    # -- ingest -------------------------------------------------------------------------

    def add_malformed(self, line: int, reason: str, raw: bytes = b"") -> None:
        self.malformed_count += 1
        if len(self.malformed) < MALFORMED_KEPT:
            self.malformed.append(Malformed(line, reason, _snippet(raw)))

    def add_line(self, raw: bytes, line: int) -> Record | None:
        """Parse and apply one complete line; malformed lines are counted, never raised."""
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
        self.add(rec)
        return rec

    def add(self, rec: Record) -> None:
        self.records += 1
        self.version += 1
        if isinstance(rec, TrainPoint):
            self._add_train(rec)
        elif isinstance(rec, Probe):
            self._rewind(rec.step)
            self.probes[rec.step] = rec
        elif isinstance(rec, Event):
            self.events.append(rec)
            if rec.event == "resume":
                self._rewind(rec.step)
        elif isinstance(rec, Checkpoint):
            self.checkpoints.append(rec)
        elif isinstance(rec, Meta):
            self.metas.append(rec)

    def _add_train(self, rec: TrainPoint) -> None:
        steps = self.steps
        if steps and rec.step <= steps[-1]:
            self._rewind(rec.step - 1)
        steps.append(rec.step)
        cols = self.columns
        cols["time"].append(rec.time)
        for name in TRAIN_FIELDS:
            cols[name].append(getattr(rec, name))

    def _rewind(self, step: int) -> None:
        """Drop what the log said about steps after `step` (a resume went back to it)."""
        steps = self.steps
        if steps and steps[-1] > step:
            cut = bisect_left(steps, step + 1)
            self.replaced_steps += len(steps) - cut
            del steps[cut:]
            for col in self.columns.values():
                del col[cut:]
        stale = [s for s in self.probes if s > step]
        for s in sorted(stale):
            self.superseded.append(self.probes.pop(s))

    # -- queries ------------------------------------------------------------------------

    @property
    def last_step(self) -> int:
        candidates = [self.steps[-1]] if self.steps else []
        if self.probes:
            candidates.append(max(self.probes))
        return max(candidates, default=0)

    def train_at(self, index: int) -> TrainPoint:
        cols = self.columns
        return TrainPoint(
            self.steps[index], cols["time"][index], *(cols[n][index] for n in TRAIN_FIELDS)
        )

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
        }


class LineSplitter:
    """Bytes in, complete lines out; a torn last line waits for its newline."""

    def __init__(self, first_line: int = 1) -> None:
        self._tail = b""
        self.next_line = first_line
        self.consumed = 0  # bytes up to the end of the last complete line

    def feed(self, data: bytes) -> tuple[list[bytes], int]:
        """Split `data`; returns (complete lines, line number of the first)."""
        first = self.next_line
        if not data:
            return [], first
        buf = self._tail + data if self._tail else data
        end = buf.rfind(b"\n")
        if end < 0:
            self._tail = buf
            return [], first
        self._tail = buf[end + 1 :]
        lines = buf[:end].split(b"\n")
        self.next_line += len(lines)
        self.consumed += end + 1
        return lines, first

    @property
    def pending(self) -> bytes:
        return self._tail


def _one_object_per_line(lines: list[bytes]) -> bool:
    """Cheap guard for the batched decode: every line opens with '{' and closes with '}'."""
    buf = b"\n".join(lines)
    n = len(lines)
    opens = buf.count(b"\n{") + (buf[:1] == b"{")
    closes = buf.count(b"}\n") + (buf[-1:] == b"}")
    return opens == n and closes == n


def ingest_lines(store: RunStore, lines: list[bytes], first: int) -> None:
    """Apply a batch of complete lines, decoding them in one call where that is safe.

    Blank lines are skipped without being counted as malformed. A batch that fails the
    one-object-per-line guard or the batched decode is decoded line by line.
    """
    if not lines:
        return
    store.lines = max(store.lines, first + len(lines) - 1)
    objs = None
    if _one_object_per_line(lines):
        try:
            objs = orjson.loads(b"[" + b",".join(lines) + b"]")
        except orjson.JSONDecodeError:
            objs = None
        if objs is not None and len(objs) != len(lines):
            objs = None
    if objs is None:
        for i, raw in enumerate(lines):
            if raw.strip():
                store.add_line(raw, first + i)
        return
    add = store.add_object
    for i, obj in enumerate(objs):
        add(obj, first + i, lines[i])


CHUNK = 4 << 20


def iter_chunks(path: Path, chunk: int = CHUNK) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        while data := fh.read(chunk):
            yield data


def load_lines(chunks: Iterable[bytes], store: RunStore | None = None) -> RunStore:
    """Read a whole log from byte chunks; a torn last line is left pending, not counted."""
    store = store or RunStore()
    splitter = LineSplitter()
    for data in chunks:
        lines, first = splitter.feed(data)
        ingest_lines(store, lines, first)
    return store


def load_log(path: str | Path) -> RunStore:
    """Read a finished or growing log file into a RunStore."""
    return load_lines(iter_chunks(Path(path)))


def finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
