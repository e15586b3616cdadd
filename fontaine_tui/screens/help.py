"""Every binding of the app and its modes, with what it does."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label


def all_bindings(app: App[int]) -> list[tuple[str, str, Binding]]:
    """(where, keys, binding) for the app and every mode and dialog screen class."""
    from fontaine_tui.screens.dialogs import NoteDialog, QuitDialog

    out = [("everywhere", b) for b in type(app).BINDINGS if isinstance(b, Binding)]
    for name, screen in [
        *getattr(app, "MODES", {}).items(),
        ("note dialog", NoteDialog),
        ("quit dialog", QuitDialog),
    ]:
        out += [(name, b) for b in getattr(screen, "BINDINGS", []) if isinstance(b, Binding)]
    return [(where, b.key_display or b.key, b) for where, b in out]


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss_help", "Close", id="help.close")]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog help"):
            yield Label("Key bindings (escape closes; ctrl+p opens the command palette)")
            yield DataTable(id="help-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("where", "key", "action", "what it does", "id")
        for where, keys, b in all_bindings(self.app):
            table.add_row(where, keys, b.description, b.tooltip, b.id or "")

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
