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

# the table's columns: from the registry alone, or with what each run's host said (the fleet)
COLUMNS = ("run", "folder", "pid", "state", "launched")
FLEET_COLUMNS = ("run", "host", "state", *(c.lower() for c in CELLS), "pid", "folder", "launched")


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
            self._fill(table, entries)
        self.query_one("#runs-title", Static).update(
            assemble(
                ("watching: ", "$text-muted"),
                (view.label, "bold"),
                "\n",
                self._title(entries, pins),
            )
        )

    def _fill(self, table: DataTable, entries: list[RunEntry]) -> None:
        """The table's rows again; the cursor stays where it was (a pin, a new reading)."""
        row = table.cursor_row
        table.clear(columns=True)
        fleet = any(e.cells for e in entries)  # every host checked: as `fontaine-tui runs`
        table.add_columns(*(FLEET_COLUMNS if fleet else COLUMNS))
        cells_of = self._fleet_row if fleet else self._row
        for e in entries:
            table.add_row(*cells_of(e), key=e.target)
        if entries:
            table.move_cursor(row=min(row, len(entries) - 1), animate=False)

    def _fleet_row(self, e: RunEntry) -> tuple[str | Text, ...]:
        """A run's row with what its host said of it (FLEET_COLUMNS)."""
        return (
            self._name_cell(e),
            cell(e.host),
            cell(e.state),
            *(cell(c) for c in e.cells or ("",) * len(CELLS)),
            str(e.pid or "—"),
            cell(e.folder),
            cell(e.launched),
        )

    def _row(self, e: RunEntry) -> tuple[str | Text, ...]:
        """A run's row from the registry alone (COLUMNS)."""
        return (
            self._name_cell(e),
            cell(e.folder),
            str(e.pid or "—"),
            cell(e.state),
            cell(e.launched),
        )

    def _title(self, entries: list[RunEntry], pins: tuple[str, ...]) -> str:
        """How many runs there are and what the keys do with them; else why there are none."""
        if not entries:
            return self.console.registry_reason
        pinned = f"{len(pins)} pinned, o overlays them" if pins else "space pins one"
        return f"{len(entries)} run(s) in the registry; enter attaches to one; {pinned}"

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
