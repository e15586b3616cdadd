"""The overlay of several runs: the runs pinned in the runs list, each followed and coloured.

A pinned run is a registered run, running or finished, here or on another host: its session
is opened as the runs list opens one (model/runs.py's `open_target`: a folder here, or
host:folder over SSH) and followed by its own source. A run that stops answering is marked
with why, never raised. `runs` hands the overlay charts (core/charts/overlay.py) what
they draw.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from fontaine_tui.core.charts.overlay import OverlayRun
from fontaine_tui.core.errors import InputError
from fontaine_tui.model.runs import RunEntry
from fontaine_tui.model.session import Session
from fontaine_tui.model.view import Outcome

RUN_COLORS = ("cyan", "magenta", "orange", "yellow", "blue", "white")  # not the bounds' colours
MOST_PINS = len(RUN_COLORS)  # one colour each
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
        if self.entry.state in ("running", "attached", "checking", "remote", ""):
            since = self.lines_at if self.lines_at is not None else self.pinned_at
            if now - since > QUIET_S:  # in minutes: the label, and a redraw, once a minute
                return f"running, quiet {int((now - since) // 60)} min"
            return "running"
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
                Outcome(f"at most {MOST_PINS} runs pinned (one colour each)", "warning"),
            )
        try:
            session, why = opener(entry)
        except (InputError, OSError) as exc:  # a row that names no run it can follow
            return None, None, Outcome(f"{entry.name}: not pinned: {exc}", "error")
        used = {p.color for p in self.pins.values()}
        color = next(c for c in RUN_COLORS if c not in used)
        pin = Pin(entry, session, color, pinned_at=self.clock())
        self.pins[entry.target] = pin
        n = len(self.pins)
        said = f"pinned {entry.name} ({n} pinned; o overlays them)"
        return pin, None, why if why is not None else Outcome(said, "information")

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
                )
            )
        return out
