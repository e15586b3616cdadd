"""review.jsonl: the reviewer's accept / flag / note actions as a hash chain.

Each line carries `prev` (sha256 of the previous line's bytes, or GENESIS for the first)
and `hash` (sha256 of the line's own canonical JSON without `hash`). An edited line fails
its own hash; a removed, inserted or rewritten line breaks the next line's `prev`; a removed
last line is found by the head kept beside the file (core/verdict/head.py). Appends hold
the file's lock, as the amendment ledger's do, so two reviewers never fork the chain.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from fontaine_tui.core.atomic import append_line, locked
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.verdict import head as chain_head
from fontaine_tui.core.verdict.record import Verdict

SCHEMA = "fontaine-tui/review/1"
ACTIONS = ("accept", "flag", "note")
GENESIS = "0" * 64


@dataclass(frozen=True, slots=True)
class ReviewEntry:
    line: int
    time: str
    action: str
    note: str
    verdict: str
    provisional: bool
    read_step: int | None


@dataclass(frozen=True, slots=True)
class ChainCheck:
    """The outcome of `verify`: ok, or the first line that does not hold and why."""

    lines: int
    bad_line: int | None = None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.bad_line is None


def _num(x: float | None) -> float | str | None:
    return x if x is None or math.isfinite(x) else repr(x)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canonical(doc: dict) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _read(path: Path) -> bytes:
    try:
        return read_whole(path)
    except FileNotFoundError:
        return b""


def append(
    path: str | Path,
    action: str,
    verdict: Verdict,
    note: str = "",
    clock: Callable[[], float] = time.time,
) -> ReviewEntry:
    """Append one action, chained to the line before it (under the file's lock)."""
    if action not in ACTIONS:
        raise ValueError(f"action: expected one of {', '.join(ACTIONS)}, got {action!r}")
    path = Path(path)
    stamp = datetime.fromtimestamp(clock(), timezone.utc).isoformat().replace("+00:00", "Z")
    with locked(path):
        data = _read(path)
        lines = _lines(data)
        doc = {
            "schema": SCHEMA,
            "time": stamp,
            "action": action,
            "note": note,
            "verdict": verdict.verdict,
            "provisional": verdict.provisional,
            "read_step": verdict.read_step,
            "delta": _num(verdict.delta),
            "preset_sha256": verdict.preset.get("sha256", ""),
            "prev": _sha(lines[-1]) if lines else GENESIS,
            chain_head.MARK: chain_head.head_name(path.name),
        }
        doc["hash"] = _sha(_canonical(doc))
        line = _canonical(doc)
        # a last line without its newline gets one first, in the same write
        append_line(path, line if not data or data.endswith(b"\n") else b"\n" + line)
        chain_head.record(path, len(lines) + 1, _sha(line))
    return ReviewEntry(
        len(lines) + 1, stamp, action, note, verdict.verdict, verdict.provisional, verdict.read_step
    )


def read(path: str | Path) -> list[ReviewEntry]:
    """The entries as written (call `verify` to know whether to trust them)."""
    out: list[ReviewEntry] = []
    data = _read(Path(path))
    for i, raw in enumerate(data.splitlines(), 1):
        try:
            d = json.loads(raw)
            out.append(
                ReviewEntry(
                    i,
                    str(d["time"]),
                    str(d["action"]),
                    str(d.get("note", "")),
                    str(d["verdict"]),
                    bool(d["provisional"]),
                    d.get("read_step"),
                )
            )
        except (ValueError, KeyError, TypeError):
            continue
    return out


def verify(path: str | Path) -> ChainCheck:
    """Walk the chain and report the first link that does not hold.

    That is the first line whose own hash or link does not hold, or a chain cut short of the
    head recorded beside it."""
    path = Path(path)
    lines = _lines(_read(path))
    head = chain_head.read(path)
    prev = GENESIS
    links = [prev]
    marked = False
    for i, raw in enumerate(lines, 1):
        try:
            doc = json.loads(raw)
            if not isinstance(doc, dict):
                raise ValueError("not an object")
        except ValueError:
            return ChainCheck(len(lines), i, f"line {i}: not a JSON object (edited)")
        claimed = doc.pop("hash", None)
        if claimed != _sha(_canonical(doc)):
            return ChainCheck(len(lines), i, f"line {i}: content does not match its hash (edited)")
        if doc.get("prev") != prev:
            where = "the start of the file" if i == 1 else f"line {i - 1}"
            return ChainCheck(
                len(lines),
                i,
                f"line {i}: does not follow {where} (a line "
                "before it was edited, removed or inserted)",
            )
        prev = _sha(raw)
        links.append(prev)
        marked = marked or chain_head.MARK in doc
    why = chain_head.check(str(path), head, links, marked)
    if why:
        return ChainCheck(len(lines), len(lines) + 1, why)
    return ChainCheck(len(lines))
