"""review.jsonl: the reviewer's accept / flag / note actions as a hash chain.

Each line carries `prev` (sha256 of the previous line's bytes; for the first, of prereg.json
beside it, as amendments.jsonl's first line does, GENESIS without one) and `hash` (sha256 of
the line's own canonical JSON without `hash`). An edited line fails its own hash; a removed,
inserted or rewritten line breaks the next line's `prev`; a trail from another run breaks the
first. A removed last line is found by the head kept beside the file (core/verdict/head.py),
and a trail removed with its head by the head every verdict.json records of it (`state`), or,
in a blinded run, by its head missing: that head is written at launch with prereg.json.
Appends hold the file's lock, as the amendment ledger's do, so two reviewers never fork the
chain, and a chain that does not hold is never extended. The trail is held to its chain from
its folder's files as bytes (`TrailFiles`): read here (`state`), or sent by another host
(`state_of`, `bank add host:/path`), the same check.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from fontaine_tui.core.atomic import append_line, locked
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.runfolder import PREREG, REVIEW, VERDICT
from fontaine_tui.core.secrets import recordable
from fontaine_tui.core.verdict import blind
from fontaine_tui.core.verdict import head as chain_head
from fontaine_tui.core.verdict.ledger import genesis
from fontaine_tui.core.verdict.prereg import blind_frozen, parse_prereg
from fontaine_tui.core.verdict.record import ReviewState, Unblinding, Verdict

SCHEMA = "fontaine-tui/review/1"
# "unblind": a blinded read seen before the endpoint (core/verdict/blind.py), with who and why
ACTIONS = ("accept", "flag", "note", "unblind")
GENESIS = "0" * 64  # the first link of a trail in a folder without prereg.json


@dataclass(frozen=True, slots=True)
class ReviewEntry:
    line: int
    time: str
    action: str
    note: str
    verdict: str
    provisional: bool
    read_step: int | None
    who: str = ""  # an unblind line's person


@dataclass(frozen=True, slots=True)
class ChainCheck:
    """The outcome of `verify`: ok, or the first line that does not hold and why."""

    lines: int
    bad_line: int | None = None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.bad_line is None


@dataclass(frozen=True, slots=True)
class TrailFiles:
    """What a review trail is held to: its folder's files as bytes, read here or on a host.

    `where` names the folder as a reader says it (a path here, `ssh host:/path` there); None
    for a file that is not there (`trail` is b"" for a trail that is not there)."""

    where: str
    trail: bytes
    head: bytes | None  # review.jsonl.head
    prereg: bytes | None  # prereg.json: the chain's first link, and whether the run is blinded
    verdict: bytes | None  # verdict.json: the head an earlier verdict recorded
    file: str = REVIEW  # the trail's file name in the folder

    @property
    def name(self) -> str:
        return _join(self.where, self.file)

    @property
    def verdict_name(self) -> str:
        return _join(self.where, VERDICT)


def _join(where: str, name: str) -> str:
    """A file's name in the folder `where`, as a local Path joins it."""
    if where in ("", "."):
        return name
    return where + name if where.endswith("/") else f"{where}/{name}"


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


def _optional(path: Path) -> bytes | None:
    """A file's bytes beside the trail; None when there is none."""
    try:
        return read_whole(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def _files(path: Path, data: bytes) -> TrailFiles:
    """The trail at `path` (its bytes `data`, as read) and the files beside it, read here."""
    folder = path.parent
    return TrailFiles(
        str(folder),
        data,
        chain_head.read(path),
        _optional(folder / PREREG),
        _optional(folder / VERDICT),
        path.name,
    )


def append(
    path: str | Path,
    action: str,
    verdict: Verdict,
    note: str = "",
    clock: Callable[[], float] = time.time,
    who: str = "",
    hidden: bool = False,
) -> ReviewEntry:
    """Append one action, chained to the line before it (under the file's lock).

    A chain that does not hold is never extended: InputError naming the break, nothing
    written. An `unblind` line names `who`, and `note` is the reason (both required). A note
    on a `hidden` (blinded) read records what the reviewer saw: BLINDED, no delta. A note
    holding a credential is refused (core/secrets.py's `recordable`): it is kept as typed."""
    _refuse_action(action, note, who)
    path = Path(path)
    stamp = datetime.fromtimestamp(clock(), timezone.utc).isoformat().replace("+00:00", "Z")
    shown = "BLINDED" if hidden else verdict.verdict
    if not path.exists():  # the lock creates a missing file: a removed trail stays removed
        _refuse_broken(path, [])
    with locked(path):
        data = _read(path)
        lines = _lines(data)
        links = _refuse_broken(path, lines)
        doc = {
            "schema": SCHEMA,
            "time": stamp,
            "action": action,
            "note": note,
            "verdict": shown,
            "provisional": verdict.provisional,
            "read_step": verdict.read_step,
            "delta": None if hidden else _num(verdict.delta),
            "preset_sha256": verdict.preset.get("sha256", ""),
            "prev": links[-1],
            chain_head.MARK: chain_head.head_name(path.name),
            **({"who": who} if action == "unblind" else {}),
        }
        doc["hash"] = _sha(_canonical(doc))
        line = _canonical(doc)
        append_line(path, _after(data, line))
        chain_head.record(path, len(lines) + 1, _sha(line))
    return ReviewEntry(
        len(lines) + 1,
        stamp,
        action,
        note,
        shown,
        verdict.provisional,
        verdict.read_step,
        who if action == "unblind" else "",
    )


def _refuse_action(action: str, note: str, who: str) -> None:
    """Refuse an action append does not take.

    An unknown one, an `unblind` without who and a reason, a note holding a credential."""
    if action not in ACTIONS:
        raise ValueError(f"action: expected one of {', '.join(ACTIONS)}, got {action!r}")
    if action == "unblind" and not (who and blind.reason_ok(note)):
        raise InputError(f"unblind: who unblinds, and {blind.REASON_RULE}")
    recordable(note, "unblind reason" if action == "unblind" else f"{action} note")


def _after(data: bytes, line: bytes) -> bytes:
    """What to append after `data`: `line`, and first the newline a last line lacks."""
    return line if not data or data.endswith(b"\n") else b"\n" + line


def record_look(
    folder: Path, verdict: Verdict, why: str, clock: Callable[[], float] = time.time
) -> ReviewEntry:
    """Append a look at a blinded read to the folder's review.jsonl: who, why, no read.

    The line records BLINDED and no delta, and names the person (core/verdict/blind.py's
    `who`); InputError (nothing written) when the reason says nothing or the trail is broken."""
    return append(folder / REVIEW, "unblind", verdict, why.strip(), clock, blind.who(), True)


def _refuse_broken(path: Path, lines: list[bytes]) -> list[str]:
    """The chain's links; InputError naming the break when it does not hold."""
    check, _, links = _check(_files(path, b""), lines)
    if not check.ok:
        raise InputError(f"{broken_text(path, check)}; nothing was written")
    return links


def read(path: str | Path) -> list[ReviewEntry]:
    """The entries as written (call `verify` to know whether to trust them)."""
    return _entries(_read(Path(path)))


def _entries(data: bytes) -> list[ReviewEntry]:
    out: list[ReviewEntry] = []
    for i, raw in enumerate(data.splitlines(), 1):
        try:
            d = json_loads(raw)
            out.append(
                ReviewEntry(
                    i,
                    str(d["time"]),
                    str(d["action"]),
                    str(d.get("note", "")),
                    str(d["verdict"]),
                    bool(d["provisional"]),
                    d.get("read_step"),
                    str(d.get("who", "")),
                )
            )
        except (ValueError, KeyError, TypeError):
            continue
    return out


def verify(path: str | Path) -> ChainCheck:
    """Walk the chain and report the first link that does not hold.

    The chain starts from prereg.json beside it (zeros without one). That is the first line
    whose own hash or link does not hold, or a chain cut short of the head recorded beside it
    (review.jsonl.head) or in the verdict.json beside it."""
    path = Path(path)
    data = _read(path)
    return _check(_files(path, data), _lines(data))[0]


def state(folder: str | Path) -> ReviewState:
    """The review trail of a run folder here as a verdict carries it (see `state_of`)."""
    path = Path(folder) / REVIEW
    return state_of(_files(path, _read(path)))


def state_of(files: TrailFiles) -> ReviewState:
    """The review trail of a run folder as a verdict carries it (see ReviewState).

    `files` are its folder's files as read here or on another host: the trail is held to its
    chain from that prereg.json, its head and that verdict.json's record of it, whichever
    host read them. Its looks at a blinded read are those of the lines that hold as links of
    this run's chain: a line past a break (a trail copied from another run breaks at line 1)
    is not this run's record of a look, and is never shown as one."""
    check, recorded, links = _check(files, _lines(files.trail))
    held = len(links) - 1  # the lines that follow prereg.json and each other
    seen = tuple(
        Unblinding(e.line, e.time, e.who, e.note, e.read_step)
        for e in _entries(files.trail)
        if e.action == "unblind" and e.line <= held
    )
    if check.ok:
        return ReviewState(check.lines, links[-1], unblinded=seen)
    return ReviewState(recorded[0], recorded[1], broken_text(files.name, check), seen)


def broken_text(path: str | Path, check: ChainCheck) -> str:
    """A break in words, naming the file."""
    name = PurePosixPath(path).name
    return f"{name} {check.reason}" if check.reason.startswith("line ") else check.reason


def _check(files: TrailFiles, lines: list[bytes]) -> tuple[ChainCheck, tuple[int, str], list[str]]:
    """The check, the longest head recorded for the chain, and the links that hold.

    `lines` are the trail's lines (`files.trail` is not read here)."""
    first = genesis(files.prereg)
    witness = _witness(files.verdict, files.verdict_name)
    links, marked, bad, why = _walk(lines, first)
    why = why or _cut_short(files, links, marked, witness)
    best = _longest_head(links, files.head, witness)
    if why:
        return ChainCheck(len(lines), bad or len(lines) + 1, why), best, links
    return ChainCheck(len(lines)), best, links


def _walk(lines: list[bytes], first: str) -> tuple[list[str], bool, int | None, str]:
    """The links that hold from `first`, and whether one carries the head mark.

    Then the first line that does not hold and why ((None, "") where every line does)."""
    links = [first]
    marked = False
    for i, raw in enumerate(lines, 1):
        why = _link(raw, i, links[-1], first)
        if why:
            return links, marked, i, why
        links.append(_sha(raw))
        marked = marked or chain_head.MARK in json_loads(raw)
    return links, marked, None, ""


def _cut_short(
    files: TrailFiles, links: list[str], marked: bool, witness: tuple[int, str] | str | None
) -> str:
    """Why a chain whose lines hold is shorter than recorded ("" when it is not).

    Held in turn to the head kept beside it, to a blinded run's head written at launch, and
    to the head the verdict.json beside it recorded."""
    origin = files.name
    why = chain_head.check(origin, files.head, links, marked)
    if why:
        return why
    if files.head is None and _kept_from_launch(files.prereg, _join(files.where, PREREG)):
        return (
            f"{chain_head.head_name(origin)}: missing, but a blinded run keeps its review trail "
            "from launch (the trail was removed, with any look at the hidden read it recorded)"
        )
    if isinstance(witness, tuple):
        return chain_head.reaches(origin, files.verdict_name, witness, links)
    return witness or ""


def _longest_head(
    links: list[str], head: bytes | None, witness: tuple[int, str] | str | None
) -> tuple[int, str]:
    """The longest (lines, head) recorded for the chain: its links, its head, its verdict.json."""
    recorded = [(len(links) - 1, links[-1])]
    recorded += [r for r in (head and chain_head.parse(head), witness) if isinstance(r, tuple)]
    return max(recorded, key=lambda r: r[0])


def _kept_from_launch(prereg: bytes | None, origin: str) -> bool:
    """Whether the trail's head was written at launch (prereg.py's `blind_frozen`)."""
    if prereg is None:  # no prereg.json: said where it is read
        return False
    try:
        return blind_frozen(parse_prereg(prereg, origin).preset)
    except InputError:  # one that does not hold: said where it is read
        return False


def _link(raw: bytes, i: int, prev: str, genesis: str) -> str:
    """Why line `i` does not hold as the link after `prev` ("" when it does)."""
    try:
        doc = json_loads(raw)
        if not isinstance(doc, dict):
            raise ValueError("not an object")
    except ValueError:
        return f"line {i}: not a JSON object (edited)"
    claimed = doc.pop("hash", None)
    if claimed != _sha(_canonical(doc)):
        return f"line {i}: content does not match its hash (edited)"
    if doc.get("prev") == prev:
        return ""
    if i == 1 and doc.get("prev") == GENESIS:
        return (
            "line 1: starts from no prereg.json (zeros), but prereg.json is beside it (a "
            "trail from another run, or one rebuilt or written before trails were anchored)"
        )
    if i == 1:
        return (
            "line 1: does not follow prereg.json (a trail from another run, a line before it "
            "removed, or prereg.json changed)"
        )
    return (
        f"line {i}: does not follow line {i - 1} (a line before it was edited, removed or inserted)"
    )


def _witness(data: bytes | None, path: str) -> tuple[int, str] | str | None:
    """The review head an earlier verdict.json recorded, why it cannot be read, or None.

    `data` is its bytes (None: there is none), `path` its name. None when there is no
    verdict.json of ours, or it records no review trail (written before it did)."""
    if data is None:
        return None
    if b'"schema": "fontaine-tui/verdict/' not in data[:200]:
        return None  # not ours: it records nothing of the trail
    try:
        review = json_loads(data).get("review")
        if review is None:
            return None
        n, head = review["lines"], review["head"]
    except (ValueError, KeyError, TypeError, AttributeError):
        return f'{path}: review: expected {{"lines": N, "head": sha256}} (edited)'
    if not chain_head.counted(n) or not isinstance(head, str):
        return f'{path}: review: expected {{"lines": N, "head": sha256}} (edited)'
    return n, head
