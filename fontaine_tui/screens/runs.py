"""Runs mode: the babysit registry; enter attaches the console to the selected run.

Space pins the selected run for the overlay mode (o), or unpins it; a pinned run's name
carries its colour's dot.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.color import Color
from textual.widgets import DataTable, Static

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.runs.fleet import CELLS
from fontaine_tui.model.runs import RunEntry, open_target
from fontaine_tui.model.view import RunView
from fontaine_tui.screens.base import ViewScreen
from fontaine_tui.widgets.keys_footer import KeysFooter
from fontaine_tui.widgets.safe import assemble, cell, notify


class RunsScreen(ViewScreen):
    TITLE = "runs"
    BINDINGS = [
        Binding(
            "space",
            "pin",
            "Pin/unpin",
            id="runs.pin",
            tooltip="Pin the selected run for the overlay mode (o), or unpin it",
        ),
        Binding(
            "o",
            "app.switch_mode('overlay')",
            "Overlay",
            id="runs.overlay",
            tooltip="The pinned runs overlaid: train losses and reads (the overlay mode)",
        ),
    ]
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
        yield KeysFooter()

    def draw(self, view: RunView) -> None:
        entries = self.console.registry_entries()
        table = self.query_one(DataTable)
        overlay = self.console.overlay
        overlay.refresh(entries)
        pins = tuple(t for t in overlay.pins)
        if (tuple(entries), pins) != self._shown:
            self._shown = (tuple(entries), pins)
            row = table.cursor_row  # kept: a pin or a new reading does not move the cursor
            table.clear(columns=True)
            if any(e.cells for e in entries):  # every host checked: as `fontaine-tui runs`
                table.add_columns(
                    "run", "host", "state", *(c.lower() for c in CELLS), "pid", "folder", "launched"
                )
                for e in entries:
                    cells = e.cells or ("",) * len(CELLS)
                    table.add_row(
                        self._name_cell(e),
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
                        self._name_cell(e),
                        cell(e.folder),
                        str(e.pid or "—"),
                        cell(e.state),
                        cell(e.launched),
                        key=e.target,
                    )
            if entries:
                table.move_cursor(row=min(row, len(entries) - 1), animate=False)
        pinned = f"{len(pins)} pinned, o overlays them" if pins else "space pins one"
        title = (
            f"{len(entries)} run(s) in the registry; enter attaches to one; {pinned}"
            if entries
            else self.console.registry_reason
        )
        self.query_one("#runs-title", Static).update(
            assemble(("watching: ", "$text-muted"), (view.label, "bold"), "\n", title)
        )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            try:
                self.console.attach_target(str(event.row_key.value))
            except InputError as exc:  # a row naming no run it can follow: one line
                notify(self, str(exc), severity="error", timeout=6)

    def _name_cell(self, entry: RunEntry) -> str | Text:
        """The run's name; a pinned run's after a dot of its colour (a Text the table measures)."""
        pin = self.console.overlay.pins.get(entry.target)
        if pin is None:
            return cell(entry.name)
        return Text.assemble(
            ("● ", Style(color=Color.parse(pin.color).rich_color)), cell(entry.name)
        )

    def action_pin(self) -> None:
        """Pin the selected run for the overlay, or unpin it; a pinned run is followed."""
        table = self.query_one(DataTable)
        if not table.row_count:
            self.notify("no run to pin", timeout=3)
            return
        target = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        entry = (
            next((e for e in self._shown[0] if e.target == target), None) if self._shown else None
        )
        if entry is None:
            return
        console = self.console
        added, removed, outcome = console.overlay.toggle(
            entry,
            lambda e: open_target(console.session, e.target, console.registry, console.ssh_options),
        )
        if added is not None:
            self.app.run_worker(console.overlay.follow(added), group="overlay", exit_on_error=False)
        if removed is not None:
            self.app.run_worker(
                console.overlay.unpin(removed), group="overlay-close", exit_on_error=False
            )
        notify(self.app, outcome.message, severity=outcome.severity, timeout=4)
        view = console.view
        if view is not None:
            self.draw(view)
