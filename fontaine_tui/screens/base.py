"""A mode screen that redraws from the app's latest RunView, only while it is shown."""

from __future__ import annotations

from textual.screen import Screen

from fontaine_tui.model.session import RunView


class ViewScreen(Screen):
    """Subclasses implement `draw(view)`; hidden screens skip frames and catch up on resume."""

    def on_mount(self) -> None:
        self.watch(self.app, "view", self._on_view, init=True)

    def on_screen_resume(self) -> None:
        view = getattr(self.app, "view", None)
        if view is not None:
            self.draw(view)

    def _on_view(self, view: RunView | None) -> None:
        if view is not None and self.is_current:
            self.draw(view)

    def draw(self, view: RunView) -> None:
        raise NotImplementedError
