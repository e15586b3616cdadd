"""Runs mode: the babysit registry; enter attaches the console to the selected run."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import DataTable, Footer, Static

from fontaine_tui.model.session import RunView
from fontaine_tui.screens.base import ViewScreen
from fontaine_tui.widgets.safe import assemble, cell


class RunsScreen(ViewScreen):
    TITLE = "runs"
    _shown: tuple = ()

    def compose(self) -> ComposeResult:
        yield Static(id="runs-title")
        yield DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def draw(self, view: RunView) -> None:
        entries = self.console.registry_entries()
        table = self.query_one(DataTable)
        if tuple(entries) != self._shown:
            self._shown = tuple(entries)
            table.clear(columns=True)
            fleet = any(e.host for e in entries)  # every host checked: its columns too
            table.add_columns("run", *(("host",) if fleet else ()), "folder", "pid", "state",
                              *(("reading",) if fleet else ()), "launched")
            for e in entries:
                table.add_row(cell(e.name), *((cell(e.host),) if fleet else ()), cell(e.folder),
                              str(e.pid or "—"), cell(e.state),
                              *((cell(e.reading),) if fleet else ()), cell(e.launched),
                              key=e.target)
        title = (f"{len(entries)} run(s) in the registry; enter attaches to one"
                 if entries else self.console.registry_reason)
        self.query_one("#runs-title", Static).update(assemble(
            ("watching: ", "$text-muted"), (view.label, "bold"), "\n", title))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.console.attach_target(str(event.row_key.value))
