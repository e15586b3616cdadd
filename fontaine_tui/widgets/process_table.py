"""The processes mode's table (one row per process, kept where the cursor was) and stack pane."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from fontaine_tui.widgets.safe import assemble, cell


class ProcessTable(DataTable[str]):
    """A tree's rows keyed by pid; a redraw keeps the cursor on the same pid."""

    def show(self, columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
        if not self.columns:
            self.add_columns(*columns)
        keep = self.selected_pid()
        self.clear()
        for cells in rows:
            self.add_row(*(cell(c) for c in cells), key=cells[0])
        pids = [cells[0] for cells in rows]
        if keep is not None and str(keep) in pids:
            self.move_cursor(row=pids.index(str(keep)))

    def selected_pid(self) -> int | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:  # no row under the cursor
            return None
        return int(key) if key is not None and key.isdigit() else None


class StackPane(VerticalScroll):
    """One process's stacks (py-spy's output), scrollable, or why there are none."""

    DEFAULT_CSS = """
    StackPane { height: 1fr; border: round $primary; display: none; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="stack-text", markup=False)

    def show(self, heading: str, text: str, error: str = "") -> None:
        self.border_title = cell(heading)
        parts: list[str | tuple[str, str]] = []
        if error:
            parts.append((error + ("\n" if text else ""), "bold $error"))
        if text:
            parts.append(text)
        self.query_one("#stack-text", Static).update(assemble(*parts))
        self.display = True
        self.scroll_home(animate=False)
