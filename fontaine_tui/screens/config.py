"""Config mode: the run's params, hyperparameters and environment, as its format recorded them.

Read (model/runconfig.py) each time the mode is shown, in a thread: a W&B run file is read
whole for its config records. The rows are `key = value`, scrollable, under the file or store
they came from; a file over its bound, or none, is said in one line there.
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from fontaine_tui.core.log.formats.config import RunConfig
from fontaine_tui.model.runconfig import run_config
from fontaine_tui.screens.base import ConsoleScreen
from fontaine_tui.widgets.keys_footer import KeysFooter
from fontaine_tui.widgets.safe import assemble, cell


class ConfigScreen(ConsoleScreen):
    TITLE = "config"
    DEFAULT_CSS = """
    ConfigScreen #config-source { height: auto; padding: 0 1; }
    ConfigScreen #config-table { height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        yield Static("reading the run's config...", id="config-source")
        yield DataTable(id="config-table", cursor_type="row", zebra_stripes=True)
        yield KeysFooter()

    def on_mount(self) -> None:
        table = self.query_one("#config-table", DataTable)
        table.add_column("key", key="key")
        table.add_column("value", key="value")

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        if self.is_current:
            self.read()

    @work(thread=True, exclusive=True, group="config")
    def read(self) -> None:
        found = run_config(self.console.session)
        self.app.call_from_thread(self.show, found)

    def show(self, found: RunConfig) -> None:
        said = [f"config from {found.source}" if found.source else "no config read"]
        if found.note:
            said.append(found.note)
        if found.source and not found.rows and not found.note:
            said.append("it holds no keys")
        self.query_one("#config-source", Static).update(assemble("\n".join(said)))
        table = self.query_one("#config-table", DataTable)
        table.clear()
        for key, value in found.rows:
            # Text, not str: DataTable reads a str cell as markup ("[/bold]" raises, a list
            # "[train.py, --lr, 0.1]" is read as a tag and shows empty)
            table.add_row(Text(cell(key)), Text(cell(value)))
