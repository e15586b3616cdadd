"""The tail of engine.out.log, shown literally: markup and escapes in it are just text."""

from __future__ import annotations

from textual.widgets import Log


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

    def catch_up(self, lines: list[str] | tuple[str, ...], total: int) -> None:
        """Write what arrived since the last call; `total` counts every line ever added."""
        if total < self._seen:  # another run's output now: start over
            self.clear()
            self._seen = 0
        new = total - self._seen
        if new <= 0:
            return
        self.write_lines(list(lines)[-min(new, len(lines)) :])
        self._seen = total
