"""A Static that repaints only when what it shows changed.

It re-lays-out only when its line count changed: a frame that only moves a step counter
must not re-layout the screen.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


class QuietStatic(Static):
    _shown: tuple[str, tuple] | None = None

    def show_content(self, content: Content) -> bool:
        """Show `content`; False when it was already shown."""
        key = (content.plain, tuple(content.spans))
        old = self._shown
        if key == old:
            return False
        self._shown = key
        lines_changed = old is None or old[0].count("\n") != key[0].count("\n")
        self.update(content, layout=lines_changed)
        return True
