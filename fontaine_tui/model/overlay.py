"""The overlay of several runs: the runs pinned in the runs list, each followed and coloured.

A pinned run is a registered run, running or finished, here or on another host: its session
is opened as the runs list opens one (model/runs.py's `open_target`: a folder here, or
host:folder over SSH) and followed by its own source. A run that stops answering is marked
with why, never raised. `runs` hands the overlay charts (core/charts/overlay.py) what
they draw.

A run need not be registered: `add` overlays any run folder or store path (here, or
host:folder), opened as the runs list opens a row, so it is read by the same frozen or
foreign source rules and shown as blind as the console's run. Past the six colours they
cycle, and each round of them draws its lines with another marker (`Pin.marker`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core.charts.overlay import OverlayRun
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.target import LocalFolder, parse_follow_target
from fontaine_tui.core.runfolder import LOG
from fontaine_tui.model.runs import RunEntry
from fontaine_tui.model.session import Session
from fontaine_tui.model.view import Outcome

RUN_COLORS = ("cyan", "magenta", "orange", "yellow", "blue", "white")  # not the bounds' colours
# a round of the colours' lines drawn with one marker each (widgets/chart.py's LINE_MARKERS
# shifted by the round), so a colour seen again is told apart by its marker
RUN_MARKERS = ("•", "+", "x", "o", "*", "#")
MOST_PINS = 24  # four rounds of the colours; the legend scrolls past a screenful
UNREGISTERED = "unregistered"  # the state of a run overlaid by its path: it has no entry
QUIET_S = 120.0  # a running run with no new line for this long is said to be quiet
# a follower's words for a run it cannot reach (core/follow/ssh.py)
ANSWERING = ("reconnecting in", "unreachable", "no such run folder", "permission denied")


@dataclass(eq=False)
class Pin:
    """One pinned run: its registry row, its session, its colour and how its follower fares."""

    entry: RunEntry
    session: Session
    color: str
    trouble: str = ""  # why it is not answering ("" while it is)
    lines_at: float | None = None  # when its follower last brought lines (monotonic)
    pinned_at: float = 0.0
    marker: str = ""  # its lines' marker; "" in the first round of colours (the chart's own)

    def state(self, now: float) -> str:
        """Finished, failed, not answering (why), quiet, or running; else the registry's word."""
        s = self.session
        if s.failed():
            return "failed"
        if s.finished():
            return "finished"
        if self.trouble:
            return f"not answering: {self.trouble}"
        # attached: followed with no process known; its log has not ended, so it runs
        if self.entry.state in ("running", "attached", "checking", "remote", "", UNREGISTERED):
            # a folder overlaid by its path: no process is known, only that its log is open
            said = "log not ended" if self.entry.state == UNREGISTERED else "running"
            since = self.lines_at if self.lines_at is not None else self.pinned_at
            if now - since > QUIET_S:  # in minutes: the label, and a redraw, once a minute
                return f"{said}, quiet {int((now - since) // 60)} min"
            return said
        return self.entry.state


class Overlay:
    """The runs pinned for the overlay, in the order they were pinned."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.pins: dict[str, Pin] = {}

    def pinned(self, target: str) -> bool:
        return target in self.pins

    def toggle(
        self, entry: RunEntry, opener: Callable[[RunEntry], tuple[Session, Outcome | None]]
    ) -> tuple[Pin | None, Pin | None, Outcome]:
        """Pin the run, or unpin it when it is pinned: (pinned, unpinned, what happened).

        `opener` opens its session (model/runs.py's `open_target`). The caller follows a
        pinned run (`follow`) and closes an unpinned one's source.
        """
        old = self.pins.pop(entry.target, None)
        if old is not None:
            return None, old, Outcome(f"unpinned {entry.name}", "information")
        if len(self.pins) >= MOST_PINS:
            return (
                None,
                None,
                Outcome(f"at most {MOST_PINS} runs pinned", "warning"),
            )
        try:
            session, why = opener(entry)
        except (InputError, OSError) as exc:  # a row that names no run it can follow
            return None, None, Outcome(f"{entry.name}: not pinned: {exc}", "error")
        color, marker = self._look_free()
        pin = Pin(entry, session, color, pinned_at=self.clock(), marker=marker)
        self.pins[entry.target] = pin
        n = len(self.pins)
        said = f"pinned {entry.name} ({n} pinned; o overlays them)"
        return pin, None, why if why is not None else Outcome(said, "information")

    def _look_free(self) -> tuple[str, str]:
        """The first colour and marker no pinned run draws with, a round of colours at a time.

        Round 0 is the colours alone (the chart's markers by line order); round k draws the
        colours with RUN_MARKERS shifted by k, so no two runs share both."""
        used = {(p.color, p.marker) for p in self.pins.values()}
        for k in range(MOST_PINS // len(RUN_COLORS)):
            for i, color in enumerate(RUN_COLORS):
                marker = RUN_MARKERS[(i + k) % len(RUN_MARKERS)] if k else ""
                if (color, marker) not in used:
                    return color, marker
        return RUN_COLORS[0], ""  # not reached: at most MOST_PINS pinned

    def add(
        self, path: str, opener: Callable[[RunEntry], tuple[Session, Outcome | None]]
    ) -> tuple[Pin | None, Outcome]:
        """Overlay a run folder or store named by its path, registered or not: (pinned, said).

        `path` is a folder here (or its train_log.jsonl), or host:folder; a folder here that
        is not there is said, never followed. `opener` opens it as the runs list opens a row
        (model/runs.py's `open_target`), so its frozen preset, or its foreign format, reads it.
        A path already overlaid is said, and left pinned.
        """
        path = path.strip()
        if not path:
            return None, Outcome("no path given", "warning")
        try:
            target = _target(path)
        except InputError as exc:
            return None, Outcome(f"{path}: not overlaid: {exc}", "error")
        if target in self.pins:
            return None, Outcome(f"{path} is overlaid already", "information")
        name = target.rstrip("/").rsplit("/", 1)[-1] or target
        entry = RunEntry(name, target, None, UNREGISTERED, "")
        pin, _, outcome = self.toggle(entry, opener)
        return pin, outcome

    async def follow(self, pin: Pin) -> None:
        """Follow a pinned run to its end or its unpinning.

        Its ledger is read first (its frozen preset). A follower's trouble marks the pin;
        nothing it raises goes further.
        """
        session = pin.session
        try:
            await session.read_ledger()
            async for batch in session.source.follow():
                session.apply(batch)
                if batch.lines or batch.records:
                    pin.lines_at, pin.trouble = self.clock(), ""
                elif any(w in batch.note for w in ANSWERING):
                    pin.trouble = batch.note
                    session.version += 1
        except Exception as exc:  # a run that fails is marked, the console stays
            pin.trouble = f"{type(exc).__name__}: {exc}"
            session.version += 1

    def refresh(self, entries: list[RunEntry]) -> None:
        """Take the registry's latest word on each pinned run (its state as last checked)."""
        for e in entries:
            pin = self.pins.get(e.target)
            if pin is not None:
                pin.entry = e

    @staticmethod
    async def unpin(pin: Pin) -> None:
        with contextlib.suppress(Exception):  # a source that will not close is let go
            await pin.session.source.close()

    async def close(self) -> None:
        for pin in list(self.pins.values()):
            await self.unpin(pin)

    def key(self) -> tuple[object, ...]:
        """Changes when anything the overlay shows may have changed."""
        now = self.clock()
        return tuple((t, p.session.version, p.state(now)) for t, p in self.pins.items())

    def runs(self) -> list[OverlayRun]:
        """Each pinned run as the overlay charts draw it (a blinded read stays hidden)."""
        now = self.clock()
        out = []
        for pin in self.pins.values():
            view = pin.session.view()
            out.append(
                OverlayRun(
                    pin.entry.name,
                    pin.state(now),
                    pin.color,
                    view.store,
                    view.preset,
                    view.seen,
                    pin.marker,
                )
            )
        return out


def _target(path: str) -> str:
    """The run a path names, as the runs list keys it.

    A folder here is its absolute path (a train_log.jsonl, its folder); host:folder is kept as
    given. InputError: no such folder here."""
    parsed = parse_follow_target(path)
    if not isinstance(parsed, LocalFolder):
        return path
    folder = Path(parsed.folder).expanduser().absolute()
    if folder.is_file() and folder.name == LOG:
        folder = folder.parent
    if not folder.is_dir():
        raise InputError("no such run folder here")
    return str(folder)
