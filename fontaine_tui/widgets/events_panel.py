"""The run's story on the monitor, from its starts and checkpoints to its ends and errors.

It lists checkpoints written, starts, resumes (with the probes they superseded), ends,
errors and the log segments read (`readout.run_events`).
"""

from __future__ import annotations

from fontaine_tui.model.readout import RunEvent
from fontaine_tui.widgets.quiet import QuietStatic
from fontaine_tui.widgets.safe import assemble

KIND_STYLE = {
    "checkpoint": "$success",
    "resume": "bold $warning",
    "error": "bold $error",
    "segment": "$accent",
    "start": "$text-muted",
    "end": "$text-muted",
}


class EventsPanel(QuietStatic):
    DEFAULT_CSS = """
    EventsPanel { height: auto; min-height: 3; border: round $panel; padding: 0 1;
                  border-title-color: $text-muted; }
    """

    def on_mount(self) -> None:
        self.border_title = "events"

    def show(self, events: list[RunEvent], total: int | None = None) -> None:
        parts: list[tuple[str, str] | str] = []
        if not events:
            parts.append(("no checkpoint or resume yet", "$text-muted"))
        for i, e in enumerate(events):
            at = f"step {e.step}" if e.step is not None else f"line {e.line}"
            parts += [
                "\n" if i else "",
                (f"{at:>10} ", "$text-muted"),
                (e.text, KIND_STYLE.get(e.kind, "")),
            ]
        if total is not None and total > len(events):
            parts.append((f"\n(last {len(events)} of {total})", "$text-muted"))
        self.show_content(assemble(*parts))
