"""The run's story on the monitor, from its starts and checkpoints to its ends and errors.

It lists checkpoints written, starts, resumes (with the probes they superseded), ends,
errors and the log segments read (`readout.run_events`). A checkpoint's path that does not
fit beside its step is shortened from the left at a separator ("…/step-001000"), never
split inside a name.
"""

from __future__ import annotations

from fontaine_tui.model.readout import NO_EVENTS, RunEvent
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


AT_W = 11  # the step column: "step 1000 " right-aligned in 10, and a space
ELLIPSIS = "…/"


def shortened(path: str, room: int) -> str:
    """`path` in at most `room` columns, its leading folders left out ("…/step-001000").

    The last name is always kept whole, even where it alone is wider than `room` (the line
    then wraps before it, never inside it)."""
    if len(path) <= room or "/" not in path.strip("/"):
        return path
    names = path.rstrip("/").split("/")
    kept = names[-1]
    for name in reversed(names[:-1]):
        if len(ELLIPSIS) + len(name) + 1 + len(kept) > room:
            break
        kept = f"{name}/{kept}"
    return ELLIPSIS + kept


class EventsPanel(QuietStatic):
    DEFAULT_CSS = """
    EventsPanel { height: auto; min-height: 3; border: round $panel; padding: 0 1;
                  border-title-color: $text-muted; }
    """

    _events: tuple[list[RunEvent], int | None, str] = ([], None, NO_EVENTS)

    def on_mount(self) -> None:
        self.border_title = "events"

    def on_resize(self) -> None:
        """The paths are shortened to the width: drawn again at a new one."""
        if self.show(*self._events):
            self.refresh(layout=True)  # a path that wrapped may fit now: the height changes

    def show(
        self, events: list[RunEvent], total: int | None = None, empty: str = NO_EVENTS
    ) -> bool:
        """Show the events, or `empty` without any; False when that was already shown."""
        self._events = (events, total, empty)
        width = self.content_size.width or 10_000  # not laid out yet: as they are
        parts: list[tuple[str, str] | str] = []
        if not events:
            parts.append((empty, "$text-muted"))
        for i, e in enumerate(events):
            parts += ["\n" if i else "", *_event_line(e, width)]
        if total is not None and total > len(events):
            parts.append((f"\n(last {len(events)} of {total})", "$text-muted"))
        return self.show_content(assemble(*parts))


def _event_line(e: RunEvent, width: int) -> list[tuple[str, str] | str]:
    """One event's line: where it happened, what it was, and its path where it has one."""
    at = f"step {e.step}" if e.step is not None else f"line {e.line}"
    style = KIND_STYLE.get(e.kind, "")
    line: list[tuple[str, str] | str] = [(f"{at:>10} ", "$text-muted"), (e.text, style)]
    if e.path:  # beside the step where it fits, else its whole last name
        line.append((" " + shortened(e.path, width - AT_W - len(e.text) - 1), style))
    return line
