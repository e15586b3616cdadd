"""The amendment ledger (amendments.jsonl): declarations appended, never rewritten.

Every declaration is recorded, including one that will be refused: the ledger is an
honest record of what was declared and when; `verdict.check_amendments` decides
whether it counts (declared before the step it first affects).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fontaine_tui.core.atomic import append_line, locked
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.log.records import Probe, TrainPoint, parse_line
from fontaine_tui.core.preset.amendments import validate_extend_amendment, validate_scale_amendment
from fontaine_tui.core.preset.record import Amendment, Preset
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.secrets import recordable
from fontaine_tui.core.verdict import head as chain_head
from fontaine_tui.core.verdict.prereg import utc_iso

if TYPE_CHECKING:
    from fontaine_tui.core.log.formats.source import SourceSpec

KINDS = ("scale", "extend")
GENESIS = "0" * 64  # the first link of a ledger in a folder without prereg.json


def _to_amendment(obj: object, where: str) -> Amendment:
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object")
    try:
        rule = obj["rule"]
        seen = obj["last_step_seen"]
        if not isinstance(rule, dict) or not isinstance(seen, int) or isinstance(seen, bool):
            raise TypeError("rule must be an object and last_step_seen an integer")
        factor = rule.get("factor")
        delta = _delta_of(rule)
        return Amendment(
            id=int(obj["id"]),
            kind=str(rule.get("kind", "scale")),
            from_step=int(rule.get("from_step") or 0),
            comparator=str(rule.get("comparator") or ""),
            factor=math.nan if factor is None else float(factor),
            declared_after_step=seen,
            declared_before_step=seen + 1,
            text=str(rule.get("text", "")),
            declared_at=str(obj.get("declared_at", "")),
            source="ledger",
            to_step=int(rule.get("to_step") or 0),
            delta=delta,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{where}: expected an amendment ({type(exc).__name__}: {exc})") from None


def _delta_of(rule: dict) -> tuple[str, ...]:
    """A declared delta's (key, ours, theirs); () for a rule of another kind."""
    if rule.get("kind") != "delta":
        return ()
    return (str(rule["key"]), str(rule["ours"]), str(rule["theirs"]))


@dataclass(frozen=True, slots=True)
class LedgerRead:
    """The ledger as read, with the break in its chain if any.

    It holds the amendments up to the first line that breaks the chain, and that break in words
    ("" when the chain holds)."""

    amendments: tuple[Amendment, ...]
    broken: str = ""
    prev: str = ""  # the link a line appended now must carry (when the chain holds)
    torn: bool = False  # the file ends in a cut-short line (skipped in the reading)
    lines: int = 0  # the chain's lines (the amendments read)
    newline: bool = True  # the file ends in a newline (or is empty)


def genesis(prereg: bytes | None) -> str:
    """The chain's first link: the sha256 of prereg.json's bytes (zeros without one)."""
    return GENESIS if prereg is None else _sha(prereg)


def genesis_of(folder: RunFolder) -> str:
    """`genesis` of the run folder's prereg.json."""
    try:
        return genesis(read_whole(folder.prereg))
    except FileNotFoundError:
        return genesis(None)
    except OSError as exc:
        raise InputError(f"{folder.prereg}: cannot read ({exc.strerror})") from None


def read_amendments(folder: RunFolder) -> list[Amendment]:
    """Every declaration in the ledger, in order.

    Raises InputError naming the line where the chain breaks (an edited, removed, inserted or
    reordered line), or a line that is no amendment. A torn last line (a writer killed
    mid-line) is skipped."""
    read = read_ledger(folder)
    if read.broken:
        raise InputError(read.broken)
    return list(read.amendments)


def read_ledger(folder: RunFolder) -> LedgerRead:
    """As `read_amendments`, the break returned instead of raised (the console shows it)."""
    path = folder.amendments
    try:
        data = read_whole(path)
    except FileNotFoundError:
        data = b""
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_ledger(data, str(path), genesis_of(folder), chain_head.read(path))


def parse_ledger(data: bytes, origin: str, genesis: str, head: bytes | None = None) -> LedgerRead:
    """Walk the ledger's hash chain and return the amendments it holds.

    Each line's `hash` is the sha256 of its canonical JSON without it, its `prev` the sha256 of
    the line before (of prereg.json for the first). Amendments from the first line that does not
    hold on are not applied. A last line without its newline is read when it is whole and holds
    on; else it is a torn write, skipped. The chain must reach the head recorded beside it
    (`head`'s bytes): a cut at its end is named."""
    read = _walk(data, origin, genesis)
    why = read.broken or chain_head.check(origin, head, read.links, read.marked)
    return LedgerRead(read.amendments, why, read.prev, read.torn, len(read.links) - 1, read.newline)


@dataclass(frozen=True, slots=True)
class _Walk:
    amendments: tuple[Amendment, ...]
    broken: str = ""
    prev: str = ""
    torn: bool = False
    links: tuple[str, ...] = ()
    marked: bool = False
    newline: bool = True


def _walk(data: bytes, origin: str, genesis: str) -> _Walk:
    lines = data.split(b"\n")
    last = _unended(lines)
    out: list[Amendment] = []
    prev = genesis or GENESIS
    links = [prev]
    marked = False
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        stop = f"; amendments from line {n} on are not applied"
        if n == last and not _whole(raw, prev):  # a write cut short: skipped
            return _Walk(tuple(out), "", prev, True, tuple(links), marked, False)
        obj = _link(raw, f"{origin}:{n}", n, prev)
        if isinstance(obj, str):
            return _Walk(tuple(out), f"{obj}{stop}")
        try:
            out.append(_to_amendment(obj, f"{origin}:{n}"))
        except InputError as exc:
            return _Walk(tuple(out), f"{exc}{stop}")
        prev = _sha(raw)
        links.append(prev)
        marked = marked or chain_head.MARK in obj
    return _Walk(tuple(out), "", prev, False, tuple(links), marked, not last)


def _unended(lines: list[bytes]) -> int:
    """The number of a last line without its newline (0: the data ends with one)."""
    return len(lines) if lines and lines[-1] else 0


def _link(raw: bytes, where: str, n: int, prev: str) -> dict | str:
    """Line `n` (at `where`) as the link after `prev`, without its hash; or why it is not."""
    try:
        obj = json_loads(raw)
    except ValueError:
        return f"{where}: expected a JSON line"
    if not isinstance(obj, dict):
        return f"{where}: expected a JSON object"
    claimed = obj.pop("hash", None)
    if claimed is None:
        return f"{where}: no hash (not written by `fontaine-tui amend`, or edited)"
    if claimed != _sha(_canonical(obj)):
        return f"{where}: its content does not match its hash (edited)"
    if obj.get("prev") != prev:
        after = "prereg.json" if n == 1 else f"line {n - 1}"
        return (
            f"{where}: does not follow {after} (a line before it was edited, removed, inserted "
            f"or reordered, or prereg.json changed)"
        )
    return obj


def _whole(raw: bytes, prev: str) -> bool:
    """A line is whole: JSON whose hash holds and that follows `prev`."""
    try:
        obj = json_loads(raw)
    except ValueError:
        return False
    if not isinstance(obj, dict):
        return False
    claimed = obj.pop("hash", None)
    return claimed == _sha(_canonical(obj)) and obj.get("prev") == prev


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canonical(doc: dict) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def declare_amendment(
    folder: RunFolder,
    *,
    kind: str = "scale",
    from_step: int | None = None,
    comparator: str | None = None,
    factor: float | None = None,
    to_step: int | None = None,
    last_step_seen: int,
    preset: Preset,
    text: str = "",
) -> Amendment:
    """Validate and append one declaration; returns it as the verdict will read it."""
    recordable(text, "amend --text")
    if kind not in KINDS:
        raise InputError(f"--kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    rule: dict[str, object] = {"kind": kind}
    if kind == "extend":
        if to_step is None or factor is not None or from_step is not None:
            raise InputError("amend: an extend amendment takes --extend-to N alone")
        validate_extend_amendment(
            folder.amendments,
            "new amendment",
            to_step,
            preset.verdict,
            int(preset.recipe["eval_every"]),
        )
        rule["to_step"] = to_step
    else:
        _scale_rule(rule, folder, from_step, comparator, factor, preset)
    if text:
        rule["text"] = text
    return _append(folder, rule, last_step_seen, preset)


def declare_deltas(
    folder: RunFolder, preset: Preset, deltas: list[tuple[str, ...]]
) -> list[Amendment]:
    """Record the keys launched with although they differ from the banked comparator.

    Each (key, ours, theirs) is chained after the prereg.json just frozen, as every declaration
    is, with no step seen. It changes no read: the verdict shows it with the amendments."""
    from fontaine_tui.core.preset.delta import delta_comparator

    ref = delta_comparator(preset.path, preset.comparators, preset.verdict.reference).bank
    out = []
    for key, ours, theirs in deltas:
        text = f"{key} differs from the banked comparator, declared at launch"
        rule = {"kind": "delta", "key": key, "ours": ours, "theirs": theirs, "comparator": ref}
        out.append(_append(folder, {**rule, "text": text}, 0, preset))
    return out


def forget_deltas(folder: RunFolder) -> None:
    """Remove the ledger `declare_deltas` wrote at a launch that then did not start."""
    folder.amendments.unlink(missing_ok=True)
    chain_head.head_path(folder.amendments).unlink(missing_ok=True)


def _scale_rule(
    rule: dict[str, object],
    folder: RunFolder,
    from_step: int | None,
    comparator: str | None,
    factor: float | None,
    preset: Preset,
) -> None:
    _refuse_scale_source(from_step, comparator, factor)
    if factor is None:
        comparator = comparator or preset.verdict.reference
    fields = {
        "from_step": from_step or 0,
        "comparator": comparator or "",
        "factor": math.nan if factor is None else float(factor),
    }
    validate_scale_amendment(
        folder.amendments,
        "new amendment",
        fields,
        preset.comparators,
        int(preset.recipe["eval_every"]),
    )
    if factor is not None:
        rule["factor"] = float(factor)
    else:
        rule.update(from_step=from_step, comparator=comparator)


def _refuse_scale_source(
    from_step: int | None, comparator: str | None, factor: float | None
) -> None:
    """Refuse a scale declaration that gives both or neither of its sources.

    A scale is a fixed factor, or computed from a step's probe against a comparator."""
    if factor is not None and (from_step is not None or comparator is not None):
        raise InputError(
            "amend: expected either a fixed factor or --scale-from-step with --comparator, not both"
        )
    if factor is None and from_step is None:
        raise InputError(
            "amend: expected --scale-factor F, or --scale-from-step N (with --comparator NAME)"
        )


def _append(
    folder: RunFolder, rule: dict[str, object], last_step_seen: int, preset: Preset
) -> Amendment:
    # The lock makes (next id, append, head) one step for concurrent declarations.
    with locked(folder.amendments):
        read = read_ledger(folder)
        if read.broken:  # never extend a chain that does not hold
            raise InputError(f"{read.broken}; nothing was written")
        if read.torn:
            raise InputError(
                f"{folder.amendments}: ends in a torn line (a write was cut "
                "short); move that last partial line away by hand, then declare "
                "again; nothing was written"
            )
        ids = {a.id for a in read.amendments} | {a.id for a in preset.amendments}
        record: dict[str, object] = {
            "id": max(ids, default=0) + 1,
            "declared_at": utc_iso(time.time()),
            "last_step_seen": int(last_step_seen),
            "rule": rule,
            "prev": read.prev,
            chain_head.MARK: chain_head.head_name(folder.amendments.name),
        }
        record["hash"] = _sha(_canonical(record))
        line = _canonical(record)
        # a whole last line without its newline gets one first, in the same write
        append_line(folder.amendments, line if read.newline else b"\n" + line)
        chain_head.record(folder.amendments, read.lines + 1, _sha(line))
    return _to_amendment(record, str(folder.amendments))


def max_step_seen(log: Path) -> int:
    """The highest step of any train or eval record in the log and its rotated segments.

    The segments are every file the verdict reads. Steps a resume later replayed are included:
    the figure is what had been seen, not what survives."""
    from fontaine_tui.core.log.lines import LineCutter
    from fontaine_tui.core.log.read import segment_chunks
    from fontaine_tui.core.runfolder import check_regular, rotated_segments

    best = 0
    for path in [*rotated_segments(log), *([log] if log.exists() else [])]:
        check_regular(path)
        cutter = LineCutter(track=False)
        chunks = segment_chunks(path)
        for chunk in [*chunks, b"\n"]:  # the newline ends a last line written without one
            lines, _, _ = cutter.feed(chunk)
            for raw in lines:
                step = _step_of(raw)
                if step is not None and step > best:
                    best = step
    return best


def _step_of(raw: bytes) -> int | None:
    """The step of a train or eval record's line (None for another line, or one unread)."""
    if b'"train"' not in raw and b'"eval"' not in raw:
        return None
    try:
        rec = parse_line(raw)
    except ValueError:
        return None
    return rec.step if isinstance(rec, (TrainPoint, Probe)) else None


def foreign_step_seen(folder: Path, source: SourceSpec) -> int:
    """The highest step a foreign run's log shows, superseded steps included."""
    from fontaine_tui.core.log.formats.cold import load_source

    store = load_source(folder, source).store
    steps = [*store.steps[-1:], *store.probes, *(p.step for p in store.superseded)]
    return max(steps, default=0)
