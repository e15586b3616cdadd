"""Babysitting: when a run is polled, what each poll records, and which watcher does it.

The poll times come from [babysit] in the preset, and each poll is a line of the run folder's
babysit.jsonl.

The reference workflow's cadence: a first poll as soon as there is a step time to read
(GPU util, s/step, free RAM, data wait: "fix input starvation before letting it ride"),
then one every 30 minutes. `PollClock` decides when with an injected clock; `poll_record`
is what a poll saw; `append_poll` writes it. Only one watcher babysits a run at a time
(`WatchLock`): a console and a `fontaine-tui babysit` on the same run do not both post.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fontaine_tui.core.atomic import open_own
from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.text import gib, literal
from fontaine_tui.core.verdict import blind
from fontaine_tui.core.verdict.prereg import utc_iso
from fontaine_tui.core.verdict.record import Verdict
from fontaine_tui.core.verdict.text import headline
from fontaine_tui.core.watch.alerts import FIRST_POLL_RECORDS, SEVERITIES, WINDOW, RunWarning
from fontaine_tui.core.watch.alerts import data_wait as data_wait_of

BABYSIT_LOG = "babysit.jsonl"


@dataclass(frozen=True, slots=True)
class Cadence:
    first_steps: int  # 0: not by steps
    first_s: float  # 0: not by time
    every_s: float

    @classmethod
    def of(cls, preset: Preset) -> Cadence:
        b = preset.babysit
        return cls(
            int(b.get("first_poll_steps", 0)),
            60.0 * float(b.get("first_poll_minutes", 0)),
            60.0 * float(b.get("cadence_minutes", 30.0)),
        )


class PollClock:
    """When the next poll is due.

    The first: after `first_steps` steps or `first_s` seconds since launch, whichever comes
    first. With neither set, at the first s/step reading (the first-poll rule's). Then every
    `every_s` after the previous one."""

    def __init__(
        self,
        cadence: Cadence,
        launched_at: float | None = None,
        last: float | None = None,
        count: int = 0,
    ) -> None:
        self.cadence, self.launched_at = cadence, launched_at
        self.last, self.count = last, count

    def due(self, store: RunStore, now: float) -> str | None:
        """Which poll is due now: "first", "cadence" or None."""
        if self.last is None:
            return "first" if self._first_due(store, now) else None
        return "cadence" if now - self.last >= self.cadence.every_s else None

    def _first_due(self, store: RunStore, now: float) -> bool:
        """Whether the first poll is due.

        By steps, by time since launch, or with neither set at the first s/step reading."""
        c = self.cadence
        by_steps = c.first_steps > 0 and store.last_step >= c.first_steps
        start = self._started(store)
        by_time = c.first_s > 0 and start is not None and now - start >= c.first_s
        by_rate = c.first_steps == 0 and c.first_s == 0 and len(store.steps) >= FIRST_POLL_RECORDS
        return by_steps or by_time or by_rate

    def _started(self, store: RunStore) -> float | None:
        """When the run was launched: as told, else its first meta record's time, if any."""
        if self.launched_at is not None:
            return self.launched_at
        return store.metas[0].time if store.metas else None

    def done(self, now: float) -> None:
        self.last, self.count = now, self.count + 1


def step_time(store: RunStore) -> float | None:
    """The median s/step over the recent window (the first step, a warm-up, left out)."""
    xs = [x for x in store.columns["step_s"][1:][-WINDOW:] if math.isfinite(x) and x > 0]
    return statistics.median(xs) if xs else None


def poll_record(
    kind: str,
    store: RunStore,
    telemetry: TelemetrySnapshot | None,
    verdict: Verdict,
    warnings: Sequence[RunWarning],
    now: float,
    steps: int,
    watcher: str,
    gpu_hours: float | None = None,
    hidden: bool = False,
) -> dict[str, object]:
    """What one poll saw, as babysit.jsonl's line (numbers that could not be read: null).

    A `hidden` read (core/verdict/blind.py) is recorded as BLINDED, its label and delta left out.
    """
    shown = [w for w in warnings if w.rule != "first-poll"]
    level = max((w.severity for w in shown), key=SEVERITIES.index, default="info")
    return {
        "time": now,
        "at": utc_iso(now),
        "kind": kind,
        "watcher": watcher,
        "level": level,
        "step": store.last_step,
        "steps": steps,
        "s_per_step": step_time(store),
        **_host_fields(telemetry),
        "data_wait": data_wait_of(store),
        "gpu_hours": gpu_hours,
        **_verdict_fields(verdict, hidden),
        "warnings": [{"rule": w.rule, "severity": w.severity, "message": w.message} for w in shown],
    }


def _host_fields(telemetry: TelemetrySnapshot | None) -> dict[str, object]:
    """A poll line's GPU and host RAM fields (null where not read)."""
    if telemetry is None:
        return {
            "gpu_util_pct": None,
            "gpu_status": "no telemetry",
            "ram_available": None,
            "ram_total": None,
        }
    ram = telemetry.ram
    return {
        "gpu_util_pct": telemetry.gpu_util(),
        "gpu_status": telemetry.gpu_status,
        "ram_available": ram.available if ram is not None else None,
        "ram_total": ram.total if ram is not None else None,
    }


def _verdict_fields(verdict: Verdict, hidden: bool) -> dict[str, object]:
    """A poll line's verdict so far: BLINDED, its headline too, while the read is `hidden`."""
    return {
        "verdict": blind.BLINDED if hidden else verdict.label,
        "provisional": verdict.provisional,
        "read_step": verdict.read_step,
        "headline": blind.blinded_headline(verdict) if hidden else headline(verdict),
    }


def poll_text(rec: Mapping[str, object]) -> str:
    """The poll as the notification's text: one line of numbers, then each warning."""
    parts = [
        f"step {rec['step']}/{rec['steps']}",
        _number(rec, "s_per_step", "{:.3g} s/step"),
        _number(rec, "gpu_util_pct", "GPU util {:.0f} %") or str(rec.get("gpu_status") or ""),
        _number(rec, "data_wait", "data wait {:.0%}"),
        _ram_text(rec),
        _number(rec, "gpu_hours", "{:.2f} GPU-hours"),
    ]
    lines = [
        " · ".join(p for p in parts if p),
        f"verdict so far: {rec['headline']}",
        *_warning_lines(rec),
    ]
    return "\n".join(map(literal, lines))  # each one line, whatever a message quotes


def _warning_lines(rec: Mapping[str, object]) -> list[str]:
    """One line per warning of the poll; on the first poll, starvation's advice after them."""
    raw = rec.get("warnings")
    warnings = [w for w in raw if isinstance(w, dict)] if isinstance(raw, list) else []
    lines = [f"{w.get('severity')}: {w.get('message')}" for w in warnings]
    if rec.get("kind") == "first" and any(w.get("rule") == "starvation" for w in warnings):
        lines.append("fix the input starvation before letting it ride")
    return lines


def _number(rec: Mapping[str, object], key: str, fmt: str) -> str | None:
    """A poll line's number in words, None where it is null or not finite."""
    x = rec.get(key)
    return fmt.format(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def _ram_text(rec: Mapping[str, object]) -> str | None:
    """A poll line's host RAM in words, None where it was not read."""
    avail, total = rec.get("ram_available"), rec.get("ram_total")
    if isinstance(avail, int) and isinstance(total, int):
        return f"RAM free {gib(avail)} of {gib(total, unit=False)}"
    return None


def append_poll(path: Path, rec: Mapping[str, object]) -> None:
    """One line appended (the file is this program's; nothing before it is rewritten)."""
    line = json.dumps(rec, allow_nan=False, separators=(",", ":"), default=str) + "\n"
    fd = open_own(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)  # never through a link
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


# babysit.jsonl's other kind of line: a probe read or verdict that was posted (its word in
# the file stays "told", which the files already written hold)
POSTED = "told"


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        data = read_whole(path)
    except OSError:
        return []
    out = []
    for raw in data.splitlines():
        try:
            rec = json_loads(raw)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("time"), (int, float)):
            out.append(rec)
    return out


def read_polls(path: Path) -> list[dict[str, Any]]:
    """babysit.jsonl's polls; a torn or foreign line is skipped."""
    return [rec for rec in _lines(path) if rec.get("kind") != POSTED]


def posted_record(
    what: str, step: int, logged: float, now: float, watcher: str, said: str = ""
) -> dict[str, object]:
    """babysit.jsonl's line for a post that went out.

    `what` ("probe", "verdict", "trainer-alert:<digest>") is about the log's record at `step`
    written at `logged` (a record logged again after a resume is news again); `said`, a
    trainer alert's words as posted."""
    return {
        "time": now,
        "at": utc_iso(now),
        "kind": POSTED,
        "what": what,
        "step": step,
        "logged": logged if math.isfinite(logged) else None,
        "watcher": watcher,
        **({"said": said} if said else {}),
    }


def read_posted(path: Path) -> set[tuple[str, int, float | None]]:
    """What babysit.jsonl says was already posted, as (what, step, logged).

    A watcher that comes back (a console re-attached, a babysitter restarted) does not post it
    again."""
    out: set[tuple[str, int, float | None]] = set()
    for rec in _lines(path):
        if (
            rec.get("kind") == POSTED
            and isinstance(rec.get("step"), int)
            and isinstance(rec.get("what"), str)
        ):
            logged = rec.get("logged")
            out.add(
                (
                    rec["what"],
                    rec["step"],
                    float(logged) if isinstance(logged, (int, float)) else None,
                )
            )
    return out


def resumed_clock(
    cadence: Cadence, launched_at: float | None, path: Path, since: float | None = None
) -> PollClock:
    """A clock that carries on from the polls already in babysit.jsonl.

    A watcher restarted does not poll "first" again. `since`: polls before this time (an earlier
    attempt's) do not count."""
    polls = [p for p in read_polls(path) if since is None or float(p["time"]) >= since]
    if not polls:
        return PollClock(cadence, launched_at)
    return PollClock(cadence, launched_at, float(polls[-1]["time"]), len(polls))


class WatchLock:
    """Held by the one watcher that babysits a run (posts and polls).

    An flock on a file in the state folder, keyed by host and run folder: released when its
    process ends."""

    def __init__(self, folder: Path, key: str) -> None:
        digest = hashlib.sha256(key.encode()).hexdigest()[:24]
        self.path = folder / f"{digest}.lock"
        self._fd: int | None = None

    def acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def holder(self) -> str:
        """Who holds it, for a line ("pid 1234"), as far as the file says."""
        try:
            pid = self.path.read_text().strip()
        except OSError:
            return "another watcher"
        return f"pid {pid}" if pid.isdigit() else "another watcher"

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
