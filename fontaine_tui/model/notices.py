"""A run's events as notifications (core/notify): the launch, each probe's read as it stands
(PROVISIONAL until the endpoint), each new warning, and the final verdict with both rules, as
`launch --plain` sees them. Sending never blocks (the notifier's own threads deliver); what
failed is said at the end, its URLs redacted."""

from __future__ import annotations

from collections.abc import Callable

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.launch.alerts import RunWarning
from fontaine_tui.core.notify import Message, Notifier, load_destinations
from fontaine_tui.core.verdict.checks import BY_INSTRUMENT, HEALTHY
from fontaine_tui.core.verdict.rules import Verdict
from fontaine_tui.core.verdict.text import headline

DRAIN_S = 10.0  # how long the end of a watch waits for the last deliveries


def _level(v: Verdict) -> str:
    return "info" if v.verdict == HEALTHY else "alert" if v.verdict == BY_INSTRUMENT else "warn"


class RunNotices:
    """The notifications of one watched run; `None` destinations: nothing is sent."""

    def __init__(self, notifier: Notifier, run: str) -> None:
        self.notifier, self.run = notifier, run

    @classmethod
    def configured(cls, run: str, say: Callable[[str], None]) -> RunNotices | None:
        """From the user's config.toml and FONTAINE_NOTIFY; a bad one is said, not fatal
        (the run is already going)."""
        try:
            destinations = load_destinations()
        except InputError as exc:
            say(f"warn: notifications off: {exc}")
            return None
        return cls(Notifier(destinations), run) if destinations else None

    def _send(self, level: str, title: str, text: str, step: int | None = None,
              **fields: str) -> None:
        self.notifier.send(Message(level=level, title=title, text=text, run=self.run, step=step,
                                   fields=dict(fields)))

    def launched(self, preset: str, folder: str, pid: int, sha: str) -> None:
        self._send("info", f"{self.run}: launched", f"preset {preset}, engine pid {pid} in "
                   f"{folder} (prereg sha256 {sha[:12]})", 0, preset=preset)

    def probe(self, step: int, verdict: Verdict) -> None:
        self._send("info", f"{self.run}: probe at step {step}", f"verdict: {headline(verdict)}",
                   step, verdict=verdict.label)

    def warning(self, w: RunWarning, step: int | None) -> None:
        self._send(w.severity, f"{self.run}: {w.rule}", w.message, step)

    def final(self, verdict: Verdict, text: str, exit_line: str) -> None:
        self._send(_level(verdict), f"{self.run}: VERDICT {verdict.label}",
                   f"{exit_line}\n{text}", verdict.read_step, verdict=verdict.label)

    def close(self) -> list[str]:
        """Wait for the deliveries (at most DRAIN_S); a line per one that failed."""
        self.notifier.close(DRAIN_S)
        return [f"warn: notification to {f.destination} failed: {f.reason}"
                for f in self.notifier.failures]
