"""The amendment ledger (amendments.jsonl): declarations appended, never rewritten.

Every declaration is recorded, including one that will be refused: the ledger is an
honest record of what was declared and when; `verdict.check_amendments` decides
whether it counts (declared before the step it first affects).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import time
from pathlib import Path

from fontaine_tui.core.atomic import append_line
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import utc_iso
from fontaine_tui.core.verdict.presets import Amendment, Preset, validate_scale_amendment

KINDS = ("scale",)


def _to_amendment(obj: object, where: str) -> Amendment:
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object")
    try:
        rule = obj["rule"]
        seen = obj["last_step_seen"]
        if not isinstance(rule, dict) or not isinstance(seen, int) or isinstance(seen, bool):
            raise TypeError("rule must be an object and last_step_seen an integer")
        factor = rule.get("factor")
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
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{where}: expected an amendment ({type(exc).__name__}: {exc})"
                         ) from None


def read_amendments(folder: RunFolder) -> list[Amendment]:
    """Every declaration in the ledger, in order. A torn last line (a writer killed mid-line)
    is skipped; any other bad line is an InputError naming it."""
    path = folder.amendments
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_amendments(data, str(path))


def parse_amendments(data: bytes, origin: str) -> list[Amendment]:
    """The ledger's bytes (read locally or through a run source) as `read_amendments` reads
    them; `origin` names the file in errors."""
    lines = data.split(b"\n")
    if lines and lines[-1]:  # no trailing newline: torn
        lines = lines[:-1]
    out = []
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            raise InputError(f"{origin}:{n}: expected a JSON line") from None
        out.append(_to_amendment(obj, f"{origin}:{n}"))
    return out


def declare_amendment(folder: RunFolder, *, kind: str = "scale", from_step: int | None = None,
                      comparator: str | None = None, factor: float | None = None,
                      last_step_seen: int, preset: Preset, text: str = "") -> Amendment:
    """Validate and append one declaration; returns it as the verdict will read it."""
    if kind not in KINDS:
        raise InputError(f"--kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    if factor is not None and (from_step is not None or comparator is not None):
        raise InputError("amend: expected either a fixed factor or --scale-from-step with "
                         "--comparator, not both")
    if factor is None:
        if from_step is None:
            raise InputError("amend: expected --scale-factor F, or --scale-from-step N "
                             "(with --comparator NAME)")
        comparator = comparator or preset.verdict.reference
    fields = {"from_step": from_step or 0, "comparator": comparator or "",
              "factor": math.nan if factor is None else float(factor)}
    validate_scale_amendment(folder.amendments, "new amendment", fields, preset.comparators,
                             int(preset.recipe["eval_every"]))
    rule: dict[str, object] = {"kind": kind}
    if factor is not None:
        rule["factor"] = float(factor)
    else:
        rule.update(from_step=from_step, comparator=comparator)
    if text:
        rule["text"] = text
    # The lock makes (next id, append) one step for concurrent declarations.
    fd = os.open(folder.amendments, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        ids = {a.id for a in read_amendments(folder)} | {a.id for a in preset.amendments}
        record = {"id": max(ids, default=0) + 1, "declared_at": utc_iso(time.time()),
                  "last_step_seen": int(last_step_seen), "rule": rule}
        append_line(folder.amendments, json.dumps(record, sort_keys=True, allow_nan=False))
    finally:
        os.close(fd)
    return _to_amendment(record, str(folder.amendments))


def max_step_seen(log: Path) -> int:
    """The highest step of any train or eval record in the log, including steps a resume later
    replayed: what had been seen, not what survives."""
    from fontaine_tui.core.log.lines import LineCutter
    from fontaine_tui.core.log.read import iter_chunks
    from fontaine_tui.core.log.records import Probe, TrainPoint, parse_line

    if not log.exists():
        return 0
    best = 0
    cutter = LineCutter(track=False)
    for chunk in iter_chunks(log):
        lines, _, _ = cutter.feed(chunk)
        for raw in lines:
            if b'"train"' not in raw and b'"eval"' not in raw:
                continue
            try:
                rec = parse_line(raw)
            except ValueError:
                continue
            if isinstance(rec, (TrainPoint, Probe)) and rec.step > best:
                best = rec.step
    return best
