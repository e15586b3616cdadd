"""A plain report's warnings: the console's rules, each said once when it starts and clears.

Every plain path (launch, attach and replay with --plain) judges the run with the session's
warning rules (`Session.update_warnings`, the console's one call), so a foreign run gets only
the rules that apply to it, as in the console. A warning is said in the console's panel's
words when it first shows, again when its severity changes, and once when it clears.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.watch.alerts import RunWarning, since_text, warning_text
from fontaine_tui.core.watch.babysit import poll_text
from fontaine_tui.core.watch.traineralerts import is_alert_rule
from fontaine_tui.model.babysitter import Babysitter
from fontaine_tui.model.sampler import Sampler, take_sample
from fontaine_tui.model.session import Session

TELEMETRY_S = 5.0  # as the console: GPU, RAM and the engine's memory move slowly
NO_GPU = "no GPU telemetry"  # TelemetrySnapshot.gpu_status's words before NVML's reason


def warning_line(w: RunWarning) -> str:
    """A warning as one line, as the console's warnings panel shows it."""
    return f"{w.severity.upper():6} {warning_text(w)}"


def cleared_line(w: RunWarning) -> str:
    """A warning gone from the panel, as one line."""
    return f"{'CLEAR':6} {w.rule} since {since_text(w.since)}: no longer seen"


class PlainWarnings:
    """The warnings of one plain report: judged, and said when they start, change or clear.

    `sampler` gives the telemetry the rules read (RAM, the GPUs, the process's state), as the
    console samples it; a replay has none. A launch's watcher gives its own snapshot to `judge`.

    Where a babysitter takes the polls (a launch), its first poll is the first-poll rule's
    reading: said once, as the poll. Why there is no GPU telemetry (NVML's answer) is said in
    full once: a poll whose status a line in `said` (the launch's checks, the polls before)
    already quotes says only NO_GPU (babysit.jsonl and the notifications keep it whole).
    """

    def __init__(
        self,
        session: Session,
        say: Callable[[str], None],
        sampler: Sampler | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.session, self.say, self.sampler, self.clock = session, say, sampler, clock
        self.telemetry: TelemetrySnapshot | None = None
        self.babysitter: Babysitter | None = None  # a watcher's: ticks after each judging
        self._shown: dict[str, RunWarning] = {}
        self._sampled_at: float | None = None
        self.said: list[str] = []  # lines said already (see the class's docstring)

    async def sample(self) -> None:
        """Take a telemetry snapshot when one is due (every TELEMETRY_S seconds)."""
        now = time.monotonic()
        if self.sampler is None or (
            self._sampled_at is not None and now - self._sampled_at < TELEMETRY_S
        ):
            return
        self._sampled_at = now
        try:
            self.telemetry = await take_sample(self.sampler)
        except Exception as exc:  # telemetry is a help, never the report's end
            self.say(f"warn: telemetry not read ({exc})")
            self.sampler = None

    def judge(self, telemetry: TelemetrySnapshot | None = None, now: float | None = None) -> None:
        """Run the rules once and say what started, changed severity or cleared.

        The babysitter, if any, then sends what is new and takes a poll when one is due.
        """
        if telemetry is not None:
            self.telemetry = telemetry
        now = self.clock() if now is None else now
        self.session.update_warnings(self.telemetry, now)
        current = {w.rule: w for w in self.session.warnings if self._says(w)}
        self._say_changes(current)
        self._shown = current
        if self.babysitter is not None:
            self.babysitter.tick(self.telemetry, now)
            self._say_poll(self.babysitter.last_poll)

    def _says(self, w: RunWarning) -> bool:
        """Whether `w` is said as a warning here.

        A trainer's alert is said as its record lands (model/plain.py), and the first poll as
        the poll where a babysitter takes the polls.
        """
        return not is_alert_rule(w.rule) and not (
            w.rule == "first-poll" and self.babysitter is not None
        )

    def _say_changes(self, current: Mapping[str, RunWarning]) -> None:
        """What ended first, then what began or changed severity since the last judging."""
        for rule, gone in self._shown.items():
            if rule not in current:
                self.say(cleared_line(gone))
        for rule, w in current.items():
            old = self._shown.get(rule)
            if old is None or old.severity != w.severity:
                self.say(warning_line(w))

    def _say_poll(self, rec: Mapping[str, object] | None) -> None:
        """The poll the babysitter just took, if it took one, as indented lines."""
        if rec is None:
            return
        kind = "first poll" if rec["kind"] == "first" else "poll"
        text = poll_text(self._gpu_once(rec))
        for line in (f"babysit {kind}: " + text.replace("\n", "\n  ")).split("\n"):
            self.say(line)

    def _gpu_once(self, rec: Mapping[str, object]) -> Mapping[str, object]:
        """The poll, its GPU status without NVML's reason when that was said already."""
        status = str(rec.get("gpu_status") or "")
        if not status.startswith(f"{NO_GPU} ("):
            return rec
        if any(status in line for line in self.said):
            return {**rec, "gpu_status": NO_GPU}
        self.said.append(status)
        return rec
