"""Monitor mode: progress, losses, telemetry, warnings, events and the engine's output.

The run's events are its checkpoints, resumes and segments. The engine's output takes room
only once there is some.
"""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical

from fontaine_tui.core.charts.loss import EMA_DEFAULT, loss_chart, stepped
from fontaine_tui.core.host.history import History
from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.model.history import HistoryReader, every_s
from fontaine_tui.model.processes import who_of
from fontaine_tui.model.readout import NO_EVENTS, evidence_lines, no_events, run_events
from fontaine_tui.model.view import RunView
from fontaine_tui.screens.base import ViewScreen
from fontaine_tui.widgets.attempts_panel import AttemptsPanel
from fontaine_tui.widgets.chart import Chart
from fontaine_tui.widgets.engine_tail import EngineTail
from fontaine_tui.widgets.events_panel import EventsPanel
from fontaine_tui.widgets.keys_footer import KeysFooter
from fontaine_tui.widgets.run_header import RunHeader
from fontaine_tui.widgets.telemetry_panel import TelemetryBox, TelemetryPanel
from fontaine_tui.widgets.warnings_panel import WarningsPanel

EVENTS_SHOWN = 6


class MonitorScreen(ViewScreen):
    TITLE = "monitor"
    BINDINGS = [
        Binding(
            "e",
            "smoothing(1)",
            "Smoother",
            id="monitor.smoother",
            tooltip="More EMA smoothing of the loss curves (off, 0.6 ... 0.99)",
        ),
        Binding(
            "E",
            "smoothing(-1)",
            "Rougher",
            id="monitor.rougher",
            show=False,
            tooltip="Less EMA smoothing of the loss curves (down to off)",
        ),
        Binding(
            "g",
            "toggle_log",
            "Log/linear",
            id="monitor.log",
            tooltip="Switch the loss chart between a linear and a log y axis",
        ),
    ]

    smoothing = EMA_DEFAULT
    log_scale = False
    history: History | None = None  # the run's telemetry history, once read
    history_note = ""
    _reader: HistoryReader | None = None

    def compose(self) -> ComposeResult:
        yield RunHeader()
        with Horizontal(id="monitor-main"):
            yield Chart(id="loss-chart", min_interval=self.console.chart_s)
            with Vertical(id="monitor-side"):
                yield TelemetryBox()  # the panel, capped: it scrolls past the room left
                yield WarningsPanel(id="warnings")
                yield EventsPanel(id="events")
                attempts = AttemptsPanel(id="attempts")
                attempts.display = False  # until the run folder has an attempts.jsonl
                yield attempts
        tail = EngineTail(id="engine-tail")
        tail.display = False  # the charts keep the room until the engine prints something
        yield tail
        yield KeysFooter()

    def on_mount(self) -> None:
        super().on_mount()
        self.watch(self.app, "telemetry_snapshot", self._on_telemetry, init=True)
        self.watch(self.app, "tail_total", self._on_tail, init=True)
        self.read_history()
        session = self.console.session
        if session is not None:  # as often as it moves (a run picked later: the same pace)
            self.set_interval(every_s(session.source), self.read_history)

    def draw(self, view: RunView) -> None:
        self.query_one(RunHeader).show(view)
        st = view.store
        self._draw_losses(view)
        evidence = evidence_lines(st, view.blinded)
        self.query_one(WarningsPanel).show(view.warnings, view.note, evidence)
        total = len(st.checkpoints) + len(st.events) + len(st.segments)
        session = self.console.session
        events = (
            run_events(st, EVENTS_SHOWN)
            if session is None
            else run_events(st, EVENTS_SHOWN, lambda e: session.event_words(e, view.blinded))
        )
        empty = no_events(session.preset) if session is not None else NO_EVENTS
        self.query_one(EventsPanel).show(events, total, empty)
        self.query_one(AttemptsPanel).show(view.attempts)
        self._on_telemetry(self.console.telemetry_snapshot)
        if session is not None:  # the read shown or hidden again: the output's lines too
            self._on_tail(session.tail_total)

    def _draw_losses(self, view: RunView, force: bool = False) -> None:
        st = view.store
        self.query_one("#loss-chart", Chart).show(
            loss_chart(st, self.smoothing, self.log_scale),
            key=(id(st), st.version, self.smoothing, self.log_scale),
            force=force,
        )

    def action_smoothing(self, direction: int) -> None:
        self.smoothing = stepped(self.smoothing, direction)
        self._redraw_losses()

    def action_toggle_log(self) -> None:
        self.log_scale = not self.log_scale
        self._redraw_losses()

    def _redraw_losses(self) -> None:
        view = self.console.view
        if view is not None:
            self._draw_losses(view, force=True)
        smooth = f"EMA {self.smoothing:g}" if self.smoothing else "no smoothing"
        self.notify(
            f"loss chart: {smooth}, {'log' if self.log_scale else 'linear'} scale", timeout=2
        )

    def _on_telemetry(self, snap: TelemetrySnapshot | None) -> None:
        view = self.console.view
        frac = view.progress.data_frac if view is not None else None
        starved = view.progress.data_starved if view is not None else False
        reason = self.console.telemetry_reason
        panels = self.query(TelemetryPanel)
        if not panels:  # the screen is closing (a history read that ended after the quit)
            return
        session = self.console.session
        who = who_of(session) if session is not None else "engine"
        panels.first().show(snap, frac, starved, reason, self.history, self.history_note, who)

    @work(exclusive=True, group="history")
    async def read_history(self) -> None:
        """Read the run's telemetry history (its sidecars) and redraw the panel."""
        session = self.console.session
        if session is None:
            return
        if self._reader is None or self._reader.source is not session.source:
            self._reader = HistoryReader(session.source)  # another run picked: its own files
        self.history, self.history_note = await self._reader.read()
        self._on_telemetry(self.console.telemetry_snapshot)

    def _on_tail(self, total: int) -> None:
        """The engine's (or a [command]'s) new lines.

        While the read is hidden (or not known yet: no view drawn) those that may quote it
        are counted, not shown."""
        session = self.console.session
        if session is not None:
            tail = self.query_one(EngineTail)
            tail.display = total > 0
            # a [command] is the user's own trainer, never "the engine" (Handle.who)
            tail.border_title = (
                "command output" if who_of(session) == "command" else "engine.out.log"
            )
            view = self.console.view
            hidden = view is None or view.blinded
            tail.catch_up(
                tuple(session.tail),
                total,
                lambda lines: session.shown_output(lines, hidden),
                hidden,
            )
