"""Config mode: the run's params, hyperparameters and environment, as its format recorded them.

Read (model/runconfig.py) each time the mode is shown, in a thread: a W&B run file is read
whole for its config records. The rows are `key = value`, scrollable, under the file or store
they came from; a file over its bound, or none, is said in one line there. While the read is
blinded, a value that may be the read (a number under a key naming the rule's metric:
core/verdict/blindwords.py's `shown_value`) is hidden, and shown again once unblinded.
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from fontaine_tui.core.log.formats.config import RunConfig
from fontaine_tui.core.verdict.blindwords import shown_value
from fontaine_tui.model.runconfig import run_config
from fontaine_tui.model.view import RunView
from fontaine_tui.screens.base import ConsoleScreen
from fontaine_tui.widgets.keys_footer import KeysFooter
from fontaine_tui.widgets.safe import assemble, cell


class ConfigScreen(ConsoleScreen):
    TITLE = "config"
    # none of its own: the table scrolls with the arrows, and Screen's focus and copy keys
    # are not this mode's to list in the help
    BINDINGS = []  # noqa: RUF012 - Textual's class attribute
    DEFAULT_CSS = """
    ConfigScreen #config-source { height: auto; padding: 0 1; }
    ConfigScreen #config-table { height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        yield Static("reading the run's config...", id="config-source")
        yield DataTable(id="config-table", cursor_type="row", zebra_stripes=True)
        yield KeysFooter()

    _found: RunConfig | None = None
    _blinded: bool | None = None

    def on_mount(self) -> None:
        table = self.query_one("#config-table", DataTable)
        table.add_column("key", key="key")
        table.add_column("value", key="value")
        self.watch(self.app, "view", self._on_view, init=False)

    def _on_view(self, view: RunView | None) -> None:
        if self._found is not None and self._hidden() != self._blinded:
            self.show(self._found)  # blinded or unblinded since: its values hidden or shown

    def _hidden(self) -> bool:
        """Whether the read is blinded now; before the first view, whether the preset blinds."""
        view = self.console.view
        if view is not None:
            return view.blinded
        return bool(getattr(self.console.session.preset.verdict, "blind", False))

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        if self.is_current:
            self.read()

    @work(thread=True, exclusive=True, group="config")
    def read(self) -> None:
        found = run_config(self.console.session)
        self.app.call_from_thread(self.show, found)

    def show(self, found: RunConfig) -> None:
        self._found, self._blinded = found, self._hidden()
        metrics = self.console.session.rule_metrics()
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
            value = shown_value(key, value, metrics, self._blinded)
            table.add_row(Text(cell(key)), Text(cell(value)))
