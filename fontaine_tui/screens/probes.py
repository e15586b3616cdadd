"""Probes mode: delta(s) against banked comparators and bounds, and the probes table."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from fontaine_tui.core.charts.probes import datasets_chart, probes_chart
from fontaine_tui.model.view import RunView, blind_note
from fontaine_tui.screens.base import ViewScreen
from fontaine_tui.widgets.chart import Chart
from fontaine_tui.widgets.keys_footer import KeysFooter
from fontaine_tui.widgets.probes_table import ProbesTable
from fontaine_tui.widgets.safe import assemble


class ProbesScreen(ViewScreen):
    TITLE = "probes"
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
    ]

    by_dataset = False

    def compose(self) -> ComposeResult:
        yield Chart(id="probes-chart", min_interval=0.0)
        yield Static(id="probes-note")
        yield ProbesTable(id="probes-table")
        yield KeysFooter()

    def on_mount(self) -> None:
        super().on_mount()
        self.watch(self.app, "scaled", lambda _: self.on_screen_resume())

    def draw(self, view: RunView) -> None:
        chart = self.query_one("#probes-chart", Chart)
        chart.display = not view.blinded
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
        chart.show(spec, key=spec)
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

    def action_toggle_datasets(self) -> None:
        self.by_dataset = not self.by_dataset
        self.on_screen_resume()


def _comparator_note(view: RunView) -> str:
    comps = view.preset.comparators.values()
    banked = sum(1 for c in comps if c.bank)
    typed = len(view.preset.comparators) - banked
    if not banked:
        return "  typed-in comparators: endpoint deltas, drawn at the endpoint"
    return f"  {banked} banked run(s) as whole curves" + (
        f"; {typed} typed-in as endpoint deltas" if typed else ""
    )
