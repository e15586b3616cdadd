"""Every binding of the app and its modes, with what it does."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label


def all_bindings(app: App[int]) -> list[tuple[str, str, Binding]]:
    """(where, keys, binding) for the app and every mode and dialog screen class."""
    from fontaine_tui.screens.dialogs import ConfirmDialog, NoteDialog, QuitDialog

    out = [("everywhere", b) for b in type(app).BINDINGS if isinstance(b, Binding)]
    for name, screen in [
        *getattr(app, "MODES", {}).items(),
        ("note dialog", NoteDialog),
        ("review y/n", ConfirmDialog),
        ("quit dialog", QuitDialog),
    ]:
        out += [(name, b) for b in getattr(screen, "BINDINGS", []) if isinstance(b, Binding)]
    # the chart keys, shared by the modes that draw charts, listed once at the end
    charts = {b.id: ("charts", b) for _, b in out if (b.id or "").startswith(CHART_KEYS)}
    out = [(where, b) for where, b in out if not (b.id or "").startswith(CHART_KEYS)]
    out += charts.values()
    return [(where, b.key_display or b.key, b) for where, b in out]


CHART_KEYS = "chart."  # the id prefix of the keys every chart mode shares (widgets/chart.py)


DIALOG_W = 110  # the help dialog's width where the terminal has it (app.tcss: .dialog.help)
MIN_WHAT = 24  # below it the table scrolls sideways rather than wrap a word a line
FIXED = ((0, "where"), (1, "key"), (2, "action"), (4, "id"))


def help_columns(rows: Sequence[tuple[str, ...]], term_width: int) -> list[tuple[str, int]]:
    """The table's columns (header, width) for `rows` in a terminal `term_width` wide.

    "what it does" wraps in what the other columns leave of the dialog's width (at most
    DIALOG_W, the terminal's below it): no line is cut at its edge. Where that leaves it too
    narrow (80 columns), the binding ids (for a keymap file) are left out."""
    inner = min(DIALOG_W, term_width) - 6  # its border and padding
    columns = list(FIXED)
    fixed, what = _widths(rows, columns, inner)
    if what < MIN_WHAT:
        columns.pop()  # the id
        fixed, what = _widths(rows, columns, inner)
    heads = [(head, width) for (_, head), width in zip(columns, fixed, strict=True)]
    return [*heads[:3], ("what it does", max(MIN_WHAT, what)), *heads[3:]]


def _widths(
    rows: Sequence[tuple[str, ...]], columns: list[tuple[int, str]], inner: int
) -> tuple[list[int], int]:
    """Each of `columns`' widths (its longest cell), and what that leaves "what it does"."""
    fixed = [max(len(head), *(len(r[i]) for r in rows)) for i, head in columns]
    return fixed, inner - sum(fixed) - 2 * (len(fixed) + 1) - 2  # cell padding, scrollbar


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss_help", "Close", id="help.close")]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog help"):
            yield Label("Key bindings (escape closes; ctrl+p opens the command palette)")
            yield DataTable(id="help-table", cursor_type="row", zebra_stripes=True)

    _width = 0  # the terminal width the table was laid out for

    def on_mount(self) -> None:
        self._fill()

    def on_resize(self) -> None:
        if self.app.size.width != self._width:  # the descriptions wrap again
            self._fill()

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        table.clear(columns=True)
        self._width = self.app.size.width
        rows = [
            (where, keys, b.description, b.tooltip or "", b.id or "")
            for where, keys, b in all_bindings(self.app)
        ]
        columns = help_columns(rows, self.app.size.width)
        for head, width in columns:
            table.add_column(head, width=width)
        for r in rows:
            table.add_row(*r[: len(columns)], height=None)

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
