"""Runs mode: the babysit registry; enter attaches the console to the selected run."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import DataTable, Footer, Static

from fontaine_tui.core.launch.fleet import CELLS
from fontaine_tui.model.view import RunView
from fontaine_tui.screens.base import ViewScreen
from fontaine_tui.widgets.safe import assemble, cell


class RunsScreen(ViewScreen):
    TITLE = "runs"
    _shown: tuple = ()

    def on_mount(self) -> None:
        super().on_mount()
        # the fleet's poll ends in a thread: drawn when it does, not at the run's next line
        # (a finished run has none); a table that did not change is left as it is
        self.set_interval(1.0, self._look_again)

    def _look_again(self) -> None:
        view = self.console.view
        if view is not None and self.is_current:
            self.draw(view)

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
            if any(e.cells for e in entries):  # every host checked: as `fontaine-tui runs`
                table.add_columns(
                    "run", "host", "state", *(c.lower() for c in CELLS), "pid", "folder", "launched"
                )
                for e in entries:
                    cells = e.cells or ("",) * len(CELLS)
                    table.add_row(
                        cell(e.name),
                        cell(e.host),
                        cell(e.state),
                        *(cell(c) for c in cells),
                        str(e.pid or "—"),
                        cell(e.folder),
                        cell(e.launched),
                        key=e.target,
                    )
            else:
                table.add_columns("run", "folder", "pid", "state", "launched")
                for e in entries:
                    table.add_row(
                        cell(e.name),
                        cell(e.folder),
                        str(e.pid or "—"),
                        cell(e.state),
                        cell(e.launched),
                        key=e.target,
                    )
        title = (
            f"{len(entries)} run(s) in the registry; enter attaches to one"
            if entries
            else self.console.registry_reason
        )
        self.query_one("#runs-title", Static).update(
            assemble(("watching: ", "$text-muted"), (view.label, "bold"), "\n", title)
        )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.console.attach_target(str(event.row_key.value))
