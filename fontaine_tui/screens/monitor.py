"""Monitor mode: progress, losses, telemetry, warnings and the engine's output."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer

from fontaine_tui.core.series import loss_chart
from fontaine_tui.screens.base import ViewScreen
from fontaine_tui.screens.session import RunView
from fontaine_tui.widgets.chart import Chart
from fontaine_tui.widgets.engine_tail import EngineTail
from fontaine_tui.widgets.run_header import RunHeader
from fontaine_tui.widgets.telemetry_panel import TelemetryPanel
from fontaine_tui.widgets.warnings_panel import WarningsPanel


class MonitorScreen(ViewScreen):
    TITLE = "monitor"

    def compose(self) -> ComposeResult:
        yield RunHeader()
        with Horizontal(id="monitor-main"):
            yield Chart(id="loss-chart", min_interval=getattr(self.app, "chart_s", 2.0))
            with Vertical(id="monitor-side"):
                yield TelemetryPanel(id="telemetry")
                yield WarningsPanel(id="warnings")
        yield EngineTail(id="engine-tail")
        yield Footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.watch(self.app, "telemetry_snapshot", self._on_telemetry, init=True)
        self.watch(self.app, "tail_total", self._on_tail, init=True)

    def draw(self, view: RunView) -> None:
        self.query_one(RunHeader).show(view)
        st = view.store
        self.query_one("#loss-chart", Chart).show(loss_chart(st), key=(id(st), st.version))
        self.query_one(WarningsPanel).show(view.warnings, view.note)
        self._on_telemetry(getattr(self.app, "telemetry_snapshot", None))

    def _on_telemetry(self, snap: object) -> None:
        view = getattr(self.app, "view", None)
        frac = view.progress.data_frac if view is not None else None
        reason = getattr(self.app, "telemetry_reason", "")
        self.query_one(TelemetryPanel).show(snap, frac, reason)

    def _on_tail(self, total: int) -> None:
        session = getattr(self.app, "session", None)
        if session is not None:
            self.query_one(EngineTail).catch_up(tuple(session.tail), total)
