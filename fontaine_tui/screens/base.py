"""A mode screen that redraws from the app's latest RunView, only while it is shown.

Screens read the app through this module's `Console` protocol, never through the App class.
"""

from __future__ import annotations

from typing import Protocol, cast

from textual import events
from textual.screen import Screen
from textual.widgets import Static

from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.model.overlay import Overlay
from fontaine_tui.model.runs import RegistryReader, RunEntry
from fontaine_tui.model.session import Session
from fontaine_tui.model.view import RunView


class Console(Protocol):
    """What the screens read from the app (fontaine_tui.app.FontaineApp).

    It is typed here so that a screen never imports the app.
    """

    view: RunView | None
    scaled: bool
    read_step: int | None
    review_status: str
    telemetry_snapshot: TelemetrySnapshot | None
    telemetry_reason: str
    registry_reason: str
    chart_s: float
    session: Session
    overlay: Overlay  # the runs pinned for the overlay mode
    registry: RegistryReader | None
    ssh_options: tuple[str, ...]

    def registry_entries(self) -> list[RunEntry]: ...

    def attach_folder(self, folder: str) -> None: ...

    def attach_target(self, target: str) -> None: ...


MIN_SIZE = (80, 24)  # columns, rows: every mode is drawn whole from this size up


class ConsoleScreen(Screen[object]):
    """A mode's screen, with what every mode shares.

    Below MIN_SIZE it shows one line, the size to make the terminal, in place of a layout that
    would cut its state; its keys still work (q quits)."""

    DEFAULT_CSS = """
    ConsoleScreen.-too-small > * { display: none; }
    ConsoleScreen.-too-small > #too-small {
        display: block;
        width: 100%;
        height: 100%;
        content-align: center middle;
        text-style: bold;
    }
    """

    @property
    def console(self) -> Console:
        return cast(Console, self.app)

    def on_resize(self, event: events.Resize) -> None:
        self._size_check()

    def on_screen_resume(self) -> None:
        self._size_check()

    def _size_check(self) -> None:
        width, height = self.app.size
        small = width < MIN_SIZE[0] or height < MIN_SIZE[1]
        if small:
            words = (
                f"make the terminal at least {MIN_SIZE[0]}x{MIN_SIZE[1]} "
                f"(it is {width}x{height}); q quits"
            )
            if found := self.query("#too-small"):
                found.first(Static).update(words)
            else:
                self.mount(Static(words, id="too-small"))
        else:
            self.query("#too-small").remove()
        self.set_class(small, "-too-small")


class ViewScreen(ConsoleScreen):
    """Subclasses implement `draw(view)`; hidden screens skip frames and catch up on resume."""

    def on_mount(self) -> None:
        self.watch(self.app, "view", self._on_view, init=True)

    def on_screen_resume(self) -> None:
        view = self.console.view
        if view is not None and self.is_current:  # not when composed ahead (app._warm_modes)
            self.draw(view)

    def _on_view(self, view: RunView | None) -> None:
        if view is not None and self.is_current:
            self.draw(view)

    def draw(self, view: RunView) -> None:
        raise NotImplementedError
