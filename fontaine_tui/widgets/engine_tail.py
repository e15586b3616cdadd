"""The tail of engine.out.log, shown literally: markup and escapes in it are just text.

The lines come masked (model/session.py's `apply_tail`); a `shown` filter leaves out the
ones a blinded read hides (model/session.py's `shown_output`), and the pane's subtitle
counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual.widgets import Log

# the lines to show of those given, and how many it hid
LineFilter = Callable[[Sequence[str]], tuple[list[str], int]]


class EngineTail(Log):
    """Lines arrive already made literal (`core.text.literal`); `Log` never parses markup."""

    DEFAULT_CSS = """
    EngineTail { height: 1fr; border: round $panel; border-title-color: $text-muted;
                 overflow-x: hidden; scrollbar-size-vertical: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(max_lines=400, highlight=False, auto_scroll=True, id=id)
        self.border_title = "engine.out.log"
        self._seen = 0
        self._hidden = 0
        self._key: object = None

    def catch_up(
        self,
        lines: Sequence[str],
        total: int,
        shown: LineFilter | None = None,
        key: object = None,
    ) -> None:
        """Write what arrived since the last call; `total` counts every line ever added.

        `shown` gives the lines to show of those and how many it hid; a new `key` (the read
        hidden or not) writes the lines kept again through it."""
        if total < self._seen or key != self._key:  # another run's output, or filter: anew
            self.clear()
            self._seen, self._hidden, self._key = max(0, total - len(lines)), 0, key
        new = total - self._seen
        if new > 0:
            fresh = list(lines)[-min(new, len(lines)) :]
            if shown is not None:
                fresh, hidden = shown(fresh)
                self._hidden += hidden
            self.write_lines(fresh)
            self._seen = total
        self.border_subtitle = (
            f"{self._hidden} line(s) hidden: they hold a number or name a rule's metric, so "
            "they may quote the blinded read"
            if self._hidden
            else ""
        )
