"""Probes mode: delta(s) against banked comparators and bounds, and the probes table.

The chart's cursor (`c`, then left/right) and its wall-time axis (`w`) read the spec the chart
draws (core/charts/cursor.py): built from what the evidence gate shows, and not drawn at all
while the read is blinded, so the cursor reads no blinded value."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from fontaine_tui.core.charts.chart import ChartSpec
from fontaine_tui.core.charts.cursor import ChartLook
from fontaine_tui.core.charts.probes import datasets_chart, probes_chart
from fontaine_tui.model.metrics import run_start
from fontaine_tui.model.view import RunView, blind_note
from fontaine_tui.screens.base import ViewScreen
from fontaine_tui.widgets.chart import CURSOR_KEY, WALL_KEY, Chart
from fontaine_tui.widgets.keys_footer import KeysFooter
from fontaine_tui.widgets.probes_table import ProbesTable
from fontaine_tui.widgets.quiet import QuietStatic
from fontaine_tui.widgets.safe import assemble

CURSOR_BLINDED = "cursor: no value to read, the chart is hidden while the read is blinded"


class ProbesScreen(ViewScreen):
    TITLE = "probes"
    DEFAULT_CSS = """
    ProbesScreen #probes-cursor { height: auto; padding: 0 1; }
    """
    BINDINGS = [
        Binding(
            "s",
            "app.toggle_scale",
            "Raw/scaled",
            id="probes.toggle_scale",
            tooltip="Switch the chart between raw and scale-adjusted units",
        ),
        Binding(
            "d",
            "toggle_datasets",
            "Per dataset",
            id="probes.datasets",
            tooltip="Switch the chart between the verdict's metric and the per-dataset "
            "curves (this run's and the banked comparators')",
        ),
        CURSOR_KEY,
        WALL_KEY,
        Binding(
            "left",
            "chart_move(-1)",
            "Cursor left",
            id="chart.left",
            show=False,
            priority=True,  # before the table's own, while the cursor is on
            tooltip="Move the chart cursor to the step before",
        ),
        Binding(
            "right",
            "chart_move(1)",
            "Cursor right",
            id="chart.right",
            show=False,
            priority=True,
            tooltip="Move the chart cursor to the step after",
        ),
        Binding(
            "escape",
            "chart_off",
            "Cursor off",
            id="chart.off",
            show=False,
            tooltip="Turn the chart cursor off",
        ),
    ]

    by_dataset = False

    def __init__(self) -> None:
        super().__init__()
        self.look = ChartLook()
        self.drawn: ChartSpec | None = None  # the spec the chart draws, in steps

    def compose(self) -> ComposeResult:
        yield Chart(id="probes-chart", min_interval=0.0)
        cursor = QuietStatic(id="probes-cursor")
        cursor.display = False
        yield cursor
        yield Static(id="probes-note")
        yield ProbesTable(id="probes-table")
        yield KeysFooter()

    def on_mount(self) -> None:
        super().on_mount()
        self.watch(self.app, "scaled", lambda _: self.on_screen_resume())

    def draw(self, view: RunView) -> None:
        chart = self.query_one("#probes-chart", Chart)
        chart.display = not view.blinded
        self.drawn = None
        self._said([CURSOR_BLINDED] if view.blinded and self.look.cursor else [])
        if view.blinded:  # the rule's probes are what blinding hides (core/verdict/blind.py)
            self.query_one("#probes-note", Static).update(
                assemble((blind_note(view.latest), "bold"))
            )
            self.query_one(ProbesTable).show(())
            return
        scaled = self.console.scaled
        if self.by_dataset:
            spec = datasets_chart(view.seen, view.preset, scaled)
        else:
            spec = probes_chart(view.seen, view.preset, view.latest, scaled)
        self.drawn = spec
        drawn, lines = self.look.present(spec, run_start(view.store))
        self._said(lines)
        chart.show(drawn, key=drawn)
        mode = "scale-adjusted" if scaled else "raw"
        self.query_one("#probes-note", Static).update(
            assemble(
                ("units: ", "$text-muted"),
                (mode, "bold"),
                ("  (s toggles; d: per dataset)  ", "$text-muted"),
                spec.note,
                (_comparator_note(view), "$text-muted"),
            )
        )
        self.query_one(ProbesTable).show(view.rows)

    def _said(self, lines: tuple[str, ...] | list[str]) -> None:
        """The lines under the chart: the cursor's read line, wall time's untimed curves."""
        said = self.query_one("#probes-cursor", QuietStatic)
        said.display = bool(lines)
        said.show_content(assemble(("\n".join(lines), "bold")))

    def action_toggle_datasets(self) -> None:
        self.by_dataset = not self.by_dataset
        self.on_screen_resume()

    def action_chart_cursor(self) -> None:
        self.look.toggle_cursor()
        self.on_screen_resume()

    def action_chart_move(self, by: int) -> None:
        self.look.move(self.drawn, by)
        self.on_screen_resume()

    def action_wall_time(self) -> None:
        self.look.wall = not self.look.wall
        self.on_screen_resume()

    def action_chart_off(self) -> None:
        self.look.cursor = False
        self.on_screen_resume()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Left, right and Escape are the cursor's only while it is on (else the table's)."""
        if action in ("chart_move", "chart_off"):
            return self.look.cursor
        return super().check_action(action, parameters)


def _comparator_note(view: RunView) -> str:
    comps = view.preset.comparators.values()
    banked = sum(1 for c in comps if c.bank)
    typed = len(view.preset.comparators) - banked
    if not banked:
        return "  typed-in comparators: endpoint deltas, drawn at the endpoint"
    return f"  {banked} banked run(s) as whole curves" + (
        f"; {typed} typed-in as endpoint deltas" if typed else ""
    )
