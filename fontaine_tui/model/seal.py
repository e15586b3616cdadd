"""A run sealed into a bundle, and a bundle verified offline (core/seal/bundle.py).

The bundle holds exactly what the verdict reads (model/judge.py's RECORDS and `Judged.reads`):
prereg.json, the amendment and review chains with their heads, attempts.jsonl, and the
evidence (the run's log with its rotated segments, or the files another trainer's [source]
reads, by the names the preset reads them through) when it is small enough to carry; and the
banked runs its comparators were read from (bank/NAME/SHA256.json). Beside them: verdict.json
computed now (as `verdict --json` prints it), the overlay chart when the run folder has one, and
provenance.json. `verify` recomputes the verdict from the bundle alone, its bank too.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fontaine_tui.core import runfolder
from fontaine_tui.core.bank.store import bank_at, version_bytes
from fontaine_tui.core.bank.store import get as bank_get
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.seal.bundle import Bundle, pack, unpack
from fontaine_tui.core.seal.export import CHART_NAME
from fontaine_tui.core.verdict import review
from fontaine_tui.core.verdict.head import head_name
from fontaine_tui.core.verdict.ledger import genesis, parse_ledger
from fontaine_tui.core.verdict.prereg import parse_prereg
from fontaine_tui.model.judge import RECORDS, Judged, judge

EVIDENCE = "evidence/"  # the folder in the bundle that holds the run's own files
EVIDENCE_MAX = 64 << 20  # bytes of evidence carried; more and the bundle holds the chain only
BANK = "bank/"  # the folder in the bundle that holds the banked runs the verdict read
PROVENANCE = "provenance.json"


@dataclass(frozen=True, slots=True)
class Sealed:
    """A sealed bundle's bytes, its digest and the verdict it holds."""

    data: bytes
    digest: str
    judged: Judged


def _own_inside(path: Path, root: Path) -> None:
    """Refuse one of the run folder's own files that links outside the run folder.

    Its own files are its log and rotated segments, its records and the chart: the program
    never makes one a link, and sealing would carry what it points to. A [source] path the
    frozen preset names is the trainer's, and may be a link (docs/sealing.md)."""
    if not path.is_symlink():
        return
    real, inside = os.path.realpath(path), os.path.realpath(root)
    if os.path.commonpath([real, inside]) != inside:
        raise InputError(
            f"{path}: a symbolic link to a file outside the run folder; not carried into "
            "a seal (seal refused: put the file itself in the run folder)"
        )


def _own_name(name: str) -> bool:
    """A name the run folder contract fixes: the log, its rotated segments, the records."""
    rest = name[len(runfolder.LOG) :]
    return (
        name in RECORDS
        or name == CHART_NAME
        or (
            name.startswith(runfolder.LOG) and (not rest or bool(runfolder.ROTATED.fullmatch(rest)))
        )
    )


def _evidence(judged: Judged, root: Path) -> tuple[dict[str, bytes], str]:
    """The evidence's files by their name in the bundle, and a line saying what it is."""
    records = {root / name for name in RECORDS}
    paths = [p for p in judged.reads() if p not in records]
    for p in paths:  # the run folder's own files: never a link to outside it
        if p.parent == root and _own_name(p.name):
            _own_inside(p, root)
    size = sum(p.stat().st_size for p in paths)
    if size > EVIDENCE_MAX:
        return {}, (
            f"not carried: {size} bytes of log over {EVIDENCE_MAX}; verification covers "
            "the chain and hashes only"
        )
    return _carried(paths, root)


def _carried(paths: list[Path], root: Path) -> tuple[dict[str, bytes], str]:
    """The evidence read, by its names in the bundle, and the line saying what it is.

    None of it is carried where a file lies outside the run folder.
    """
    out: dict[str, bytes] = {}
    for p in paths:
        # named as the verdict reads it: a link by its own name, not where it points
        rel = os.path.relpath(os.path.abspath(p), os.path.abspath(root))
        if rel.startswith(".."):
            return {}, f"not carried: {p} lies outside the run folder; the chain and hashes only"
        out[EVIDENCE + Path(rel).as_posix()] = read_whole(p, EVIDENCE_MAX)
    names = ", ".join(sorted(n[len(EVIDENCE) :] for n in out))
    return out, f"carried: {names}; verify recomputes the verdict from it"


def _banked(judged: Judged) -> dict[str, bytes]:
    """The banked runs the verdict read, each as its file in the bank (named by its sha256)."""
    return {f"{BANK}{e.name}/{e.sha256}.json": version_bytes(e) for e in judged.banked()}


def seal(target: str) -> Sealed:
    """The run folder at `target` sealed (nothing is written)."""
    root = Path(target)
    if not root.is_dir():
        raise InputError(f"{target}: expected a run folder (holding {runfolder.PREREG})")
    folder = runfolder.RunFolder(root)
    if not folder.prereg.is_file():
        raise InputError(f"{folder.prereg}: no prereg.json (only a launched run can be sealed)")
    judged = judge(str(root))
    trail = judged.verdict.review
    if trail is not None and not trail.intact:
        raise InputError(
            f"{root / runfolder.REVIEW}: {trail.broken}; a run whose review trail does not "
            "hold is not sealed"
        )
    files: dict[str, bytes] = {}
    for name in [*RECORDS, CHART_NAME]:  # what the verdict read, and the chart for the report
        _own_inside(root / name, root)
        if (root / name).is_file():
            files[name] = read_whole(root / name)
    files.update(_banked(judged))
    doc = judged.verdict.to_json()
    files[runfolder.VERDICT] = (json.dumps(doc, indent=2) + "\n").encode()
    prereg = json_loads(files[runfolder.PREREG])
    provenance = {"prereg": prereg.get("provenance", {}), "log": doc["provenance"]["log"]}
    files[PROVENANCE] = (json.dumps(provenance, indent=2, sort_keys=True) + "\n").encode()
    evidence, note = _evidence(judged, root)
    files.update(evidence)
    data, digest = pack(files, judged.preset.run_name, note)
    return Sealed(data, digest, judged)


@dataclass(frozen=True, slots=True)
class Verified:
    """A bundle that holds: its digest and whether its verdict was recomputed.

    `banked`: the banked runs the recomputed verdict read from the bundle; `unread`: those its
    frozen preset names that the bundle does not carry (the bank that sealed it lacked them),
    read by neither verdict."""

    bundle: Bundle
    recomputed: bool
    banked: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()


def _first_difference(a: object, b: object, path: str = "") -> str:
    """The first key where two JSON values differ ("" when equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return _first_key_difference(a, b, path)
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return _first_item_difference(a, b, path)
    return "" if a == b else path or "(the whole document)"


def _first_key_difference(a: dict[str, object], b: dict[str, object], path: str) -> str:
    """The first key, in sorted order, that one object lacks or holds differently ("" if none)."""
    for k in sorted(set(a) | set(b)):
        where = f"{path}.{k}" if path else k
        if k not in a or k not in b:
            return where
        if found := _first_difference(a[k], b[k], where):
            return found
    return ""


def _first_item_difference(a: list[object], b: list[object], path: str) -> str:
    """The first item two lists of one length hold differently ("" if none)."""
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if found := _first_difference(x, y, f"{path}[{i}]"):
            return found
    return ""


def _check_chains(b: Bundle, origin: str) -> str:
    """Check prereg.json and the amendment chain from it; the preset sha256 it froze."""
    prereg = b.files.get(runfolder.PREREG)
    if prereg is None:
        raise InputError(f"{origin}: {runfolder.PREREG}: missing")
    frozen = parse_prereg(prereg, f"{origin}: {runfolder.PREREG}").preset_sha256
    data = b.files.get(runfolder.AMENDMENTS, b"")
    head = b.files.get(head_name(runfolder.AMENDMENTS))
    read = parse_ledger(data, runfolder.AMENDMENTS, genesis(prereg), head)
    if read.broken:
        raise InputError(f"{origin}: {read.broken}")
    return frozen


# the bundle's own records: an evidence file of the same name would stand in for one of them
OWN = frozenset({*RECORDS, runfolder.VERDICT, CHART_NAME, PROVENANCE})


def _unpacked(b: Bundle, into: Path, bank: Path, origin: str) -> list[str]:
    """The bundle's run folder unpacked into `into` and its banked runs into `bank`.

    Returns the banked runs' refs, each checked against its sha256 as the bank checks it."""
    refs = []
    for name, body in b.files.items():
        if name.startswith(BANK):
            refs.append(_bank_ref(name, origin))
            path = bank / name[len(BANK) :]
        elif name.startswith(EVIDENCE) or name in RECORDS:
            path = into / _run_name(name, origin)
        else:
            continue  # verdict.json is recomputed here, not read; the chart and provenance said
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    for ref in refs:
        try:
            bank_get(ref, bank)
        except InputError as exc:
            raise InputError(f"{origin}: {BANK}{ref.replace('@', '/')}.json: {exc}") from None
    return refs


def _bank_ref(name: str, origin: str) -> str:
    """A banked run's file, bank/NAME/<sha256>.json, as its ref NAME@<sha256>."""
    parts = name[len(BANK) :].split("/")
    if len(parts) != 2 or not re.fullmatch(r"[0-9a-f]{64}\.json", parts[1]):
        raise InputError(f"{origin}: {name}: expected {BANK}NAME/<sha256>.json")
    return f"{parts[0]}@{parts[1][:-5]}"


def _run_name(name: str, origin: str) -> str:
    """A record's or an evidence file's name in the run folder.

    An evidence file may not be named as one of the bundle's own records: it would stand in
    for it when the verdict is recomputed.
    """
    if not name.startswith(EVIDENCE):
        return name
    rel = name[len(EVIDENCE) :]
    if rel in OWN or rel.split("/")[0] in OWN:
        raise InputError(
            f"{origin}: {name}: an evidence file named as the bundle's own {rel} "
            "(it would stand in for it when the verdict is recomputed)"
        )
    return rel


def _bundled_verdict(b: Bundle, origin: str) -> Any:  # as json_loads: the caller checks it
    """The bundled verdict.json as read (limits.json_loads); InputError with its reason."""
    raw = b.files.get(runfolder.VERDICT)
    if raw is None:
        raise InputError(f"{origin}: {runfolder.VERDICT}: missing (expected the sealed verdict)")
    try:
        return json_loads(raw)
    except ValueError as exc:  # not JSON, or nested too deep: its reason
        raise InputError(
            f"{origin}: {runfolder.VERDICT}: {exc} (expected the verdict `seal` wrote)"
        ) from None


def _check_verdict_bounds(b: Bundle, origin: str, frozen: str) -> None:
    """The bundled verdict must be a read of the preset (sha256 `frozen`) prereg.json froze."""
    try:
        read_with = _bundled_verdict(b, origin)["preset"]["sha256"]
    except (KeyError, TypeError):
        raise InputError(
            f"{origin}: {runfolder.VERDICT}: key preset.sha256: expected a verdict naming its "
            "preset's sha256"
        ) from None
    if read_with != frozen:
        raise InputError(
            f"{origin}: {runfolder.VERDICT}: key preset.sha256: read with preset "
            f"{str(read_with)[:12]}, not the one {runfolder.PREREG} froze ({str(frozen)[:12]})"
        )


def verify(path: str) -> Verified:
    """Check a bundle offline; InputError names the first broken file or key."""
    b = unpack(_bundle_bytes(path), path)
    _check_verdict_bounds(b, path, _check_chains(b, path))
    with tempfile.TemporaryDirectory(prefix="fontaine-verify-") as tmp:
        run, bank = Path(tmp) / "run", Path(tmp) / "bank"
        run.mkdir()
        banked = _unpacked(b, run, bank, path)
        _check_review(b, run, path)
        if not any(n.startswith(EVIDENCE) for n in b.files):
            return Verified(b, False)
        try:
            with bank_at(bank):  # the banked runs the bundle carries, never this host's bank
                judged = judge(str(run))
        except InputError as exc:
            raise InputError(f"{path}: evidence: {exc}") from None
    unread = tuple(
        sorted({c.bank for c in judged.preset.comparators.values() if c.bank and not c.entry})
    )
    _check_recomputed(b, path, judged.verdict.to_json(), unread)
    return Verified(b, True, tuple(sorted(banked)), unread)


def _check_review(b: Bundle, run: Path, path: str) -> None:
    """A bundled review trail, unpacked into `run`, must hold as its chain was written."""
    if runfolder.REVIEW in b.files:
        check = review.verify(run / runfolder.REVIEW)
        if not check.ok:
            raise InputError(f"{path}: {runfolder.REVIEW}: {check.reason}")


def _bundle_bytes(path: str) -> bytes:
    """The bundle file's bytes; a folder (naming the bundles it holds) or no file refused."""
    if Path(path).is_dir():
        sealed = sorted(p.name for p in Path(path).glob("*.seal.zip"))
        there = f" (this one holds {', '.join(sealed)})" if sealed else ""
        raise InputError(
            f"{path}: a folder, not a bundle: verify takes the .seal.zip that "
            f"`fontaine-tui seal RUN` writes{there}"
        )
    try:
        return read_whole(path, 1 << 30)
    except FileNotFoundError:
        raise InputError(f"{path}: no such bundle") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def _check_recomputed(
    b: Bundle, path: str, recomputed: dict[str, Any], unread: tuple[str, ...]
) -> None:
    """The bundled verdict must be the one recomputed; InputError names the first key apart.

    `unread`: the banked runs the bundle does not carry, named as a likely cause.
    """
    key = _first_difference(_bundled_verdict(b, path), recomputed)
    if not key:
        return
    lacking = (
        f" (the bundle does not carry the banked run {', '.join(unread)}, which the "
        "bundled verdict may have read)"
        if unread
        else ""
    )
    raise InputError(
        f"{path}: {runfolder.VERDICT}: key {key}: the bundled verdict differs from the one "
        f"recomputed from the bundled evidence{lacking}"
    )
