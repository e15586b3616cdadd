"""The footer of every mode: Textual's Footer, rebuilt only when the keys it shows change.

Textual's Footer rebuilds its key widgets (and restyles each) every time its screen says its
bindings were updated: on every mode switch and focus change, several times for one key
press, though the keys shown are the same. Each rebuild costs tens of milliseconds before
the switched-to mode's first frame. This footer keeps what it last showed and rebuilds only
when that differs; what it draws is Textual's own.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

FooterKeys = tuple[object, ...]  # what the footer shows: its form and each key, as compared


class KeysFooter(Footer):
    """Footer that rebuilds only when the keys, their words, or their state change."""

    _shown: FooterKeys | None = None

    def _keys_now(self) -> FooterKeys:
        keys = tuple(
            (b.key, b.key_display, b.description, b.action, b.show, b.group, enabled, tooltip)
            for _node, b, enabled, tooltip in self.screen.active_bindings.values()
        )
        return (self.compact, self.show_command_palette, keys)

    def compose(self) -> ComposeResult:
        self._shown = self._keys_now() if self._bindings_ready else None
        widgets: Iterable[Widget] = super().compose()
        yield from widgets

    def bindings_changed(self, screen: Screen[object]) -> None:
        same = (
            self._shown is not None
            and self.is_attached
            and screen is self.screen
            and self._keys_now() == self._shown
        )
        if not same:
            super().bindings_changed(screen)
