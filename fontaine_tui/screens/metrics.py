"""Metrics mode: every numeric field the run logs, a small chart each, filtered by a regex.

`/` types a filter (a regular expression; an invalid one is said in one line and the filter
before it stays), Escape clears it. The cursor keys move the selection, Enter (or a click)
opens the selected chart full size and Escape returns to the grid. The smoothing and log keys
are the monitor's. A field a pre-registered rule reads is marked with its bounds. While the
read is blinded, the probes' fields are not shown (core/verdict/blind.py).

`c` opens the selected chart full size with its cursor on (left/right step it, Escape or `c`
turns it off); `w` draws every chart on wall time (core/charts/cursor.py). The cursor reads
the spec drawn, so a field the blind keeps out of the browser it cannot read either.
"""

from __future__ import annotations

from dataclasses import replace

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input

from fontaine_tui.core.charts.chart import ChartSpec
from fontaine_tui.core.charts.cursor import ChartLook
from fontaine_tui.core.charts.loss import EMA_DEFAULT, stepped
from fontaine_tui.core.run.evidence import seen_probes
from fontaine_tui.model.metricchart import RULE_MARK, metric_chart, rules_by_field
from fontaine_tui.model.metrics import PROBE, MetricIndex, matching, run_start
from fontaine_tui.model.view import RunView
from fontaine_tui.screens.base import ViewScreen
from fontaine_tui.widgets.chart import CURSOR_KEY, WALL_KEY, Chart
from fontaine_tui.widgets.keys_footer import KeysFooter
from fontaine_tui.widgets.metric_grid import MetricGrid
from fontaine_tui.widgets.quiet import QuietStatic
from fontaine_tui.widgets.run_header import RunHeader
from fontaine_tui.widgets.safe import Part, assemble


class MetricsScreen(ViewScreen):
    TITLE = "metrics"
    DEFAULT_CSS = """
    MetricsScreen #metrics-bar, MetricsScreen #metrics-error { height: 1; padding: 0 1; }
    MetricsScreen #metrics-error { color: $error; }
    MetricsScreen #metrics-filter { height: 3; }
    MetricsScreen #metrics-full { height: 1fr; border: heavy $accent; }
    MetricsScreen #metrics-cursor { height: auto; padding: 0 1; }
    """
    BINDINGS = [
        Binding(
            "slash", "filter", "Filter", id="metrics.filter", tooltip="Type a regex over the names"
        ),
        Binding(
            "enter",
            "open",
            "Full size",
            id="metrics.open",
            tooltip="Open the selected chart full size",
        ),
        Binding(
            "escape",
            "back",
            "Back",
            id="metrics.back",
            tooltip="Back to the grid from a full-size chart, or clear the filter",
        ),
        Binding("up", "move(0, -1)", "Up", id="metrics.up", show=False, tooltip="Select above"),
        Binding(
            "down", "move(0, 1)", "Down", id="metrics.down", show=False, tooltip="Select below"
        ),
        Binding(
            "left", "move(-1, 0)", "Left", id="metrics.left", show=False, tooltip="Select left"
        ),
        Binding(
            "right", "move(1, 0)", "Right", id="metrics.right", show=False, tooltip="Select right"
        ),
        Binding(
            "e",
            "smoothing(1)",
            "Smoother",
            id="metrics.smoother",
            tooltip="More EMA smoothing of the charts (off, 0.6 ... 0.99)",
        ),
        Binding(
            "E",
            "smoothing(-1)",
            "Rougher",
            id="metrics.rougher",
            show=False,
            tooltip="Less EMA smoothing of the charts (down to off)",
        ),
        Binding(
            "g",
            "toggle_log",
            "Log/linear",
            id="metrics.log",
            tooltip="Switch the charts between a linear and a log y axis",
        ),
        CURSOR_KEY,
        WALL_KEY,
    ]

    smoothing = EMA_DEFAULT
    log_scale = False

    def __init__(self) -> None:
        super().__init__()
        self.pattern = ""
        self.error = ""
        self.selected = 0
        self.full = False
        self.shown: list[str] = []  # the fields that match, in order
        self.total = 0
        self._index: MetricIndex | None = None
        self.look = ChartLook()
        self.drawn: ChartSpec | None = None  # the full-size chart's spec, in steps
        self.said: list[str] = []  # the lines under the full-size chart

    def compose(self) -> ComposeResult:
        yield RunHeader()
        yield QuietStatic(id="metrics-bar")
        yield QuietStatic(id="metrics-error")
        field = Input(placeholder="regex over the field names (Enter keeps it, Escape clears)")
        field.id = "metrics-filter"
        field.display = False
        field.disabled = True  # nothing focuses it until `/` opens it
        yield field
        yield MetricGrid(id="metrics-grid", min_interval=self.console.chart_s)
        full = Chart(id="metrics-full", min_interval=self.console.chart_s)
        full.display = False
        yield full
        said = QuietStatic(id="metrics-cursor")
        said.display = False
        yield said
        yield KeysFooter()

    # -- drawing ------------------------------------------------------------------------

    def _names(self, view: RunView) -> list[str]:
        store = view.store
        if self._index is None or self._index.store is not store:
            self._index = MetricIndex(store, view.blinded)
        self._index.hidden = view.blinded  # the final read shows them again
        names = self._index.names()
        if view.blinded:  # the rule's probes stay hidden until the final read
            index = self._index
            names = [n for n in names if index.kind(n) != PROBE]
        self.total = len(names)
        return names

    def _spec(self, view: RunView, name: str, small: bool = True) -> tuple[ChartSpec, object]:
        index = self._index
        assert index is not None
        series = index.series(name)
        reads = rules_by_field(view.preset).get(series.key) if series.kind == PROBE else None
        store = view.store
        spec = metric_chart(
            series,
            self.smoothing,
            self.log_scale,
            reads,
            view.preset,
            seen_probes(store, view.blinded),
            store.replaced_steps,
            small,
            index.times(series) if self.look.wall else None,
        )
        stamp = store.probes_version if series.kind == PROBE else store.version
        key = (name, id(store), stamp, self.smoothing, self.log_scale, small)
        if not small:
            self.drawn, self.said = spec, []
        if not (self.look.wall or (self.look.cursor and not small)):
            return spec, key
        drawn, lines = self.look.present(spec, run_start(store), cursor=not small)
        if not small:
            self.said = lines
        elif lines:  # a small chart has no line under it: its title says it
            drawn = replace(drawn, title=f"{drawn.title}: no times logged")
        return drawn, (*key, self.look.wall, self.look.cursor and self.look.step)

    def draw(self, view: RunView) -> None:
        self.query_one(RunHeader).show(view)
        names = self._names(view)
        try:
            self.shown = matching(names, self.pattern)
        except ValueError as exc:  # the names grew past what the pattern can search in time
            self.pattern, self.selected, self.error = "", 0, f"{exc}; the filter is cleared"
            self.shown = names
        self.selected = max(0, min(self.selected, len(self.shown) - 1))
        grid = self.query_one(MetricGrid)
        full = self.query_one("#metrics-full", Chart)
        grid.display = not self.full
        full.display = self.full
        said = self.query_one("#metrics-cursor", QuietStatic)
        if not self.full or not self.shown:
            self.drawn, self.said = None, []
        if not self.full and grid.size.area:  # a hidden grid keeps its shape
            grid.reshape()
        self._bar(view)
        if self.full and self.shown:
            spec, key = self._spec(view, self.shown[self.selected], small=False)
            full.show(spec, key=key)
        said.display = bool(self.said)
        said.show_content(assemble(("\n".join(self.said), "bold")))
        if self.full and self.shown:
            return
        per = grid.per_page or 1
        first = self.selected // per * per
        page = [self._spec(view, n) for n in self.shown[first : first + per]]
        grid.show(page, self.selected - first)

    def _bar(self, view: RunView) -> None:
        parts = [
            *self._shown_words(),
            *self._lost_words(),
            *_rule_words(view),
            *self._selected_words(),
        ]
        self.query_one("#metrics-bar", QuietStatic).show_content(assemble(*parts))
        self.query_one("#metrics-error", QuietStatic).show_content(assemble(self.error))

    def _shown_words(self) -> list[Part]:
        """How many fields are shown, by what filter, on which page, smoothed and scaled how."""
        shown, total = len(self.shown), self.total
        per = self.query_one(MetricGrid).per_page or 1
        where = f"page {self.selected // per + 1}/{max(1, -(-shown // per))}"
        smooth = f"EMA {self.smoothing:g}" if self.smoothing else "no smoothing"
        return [
            (f"{shown} of {total} fields", "bold"),
            (f"  /{self.pattern}/" if self.pattern else "  (/ filters)", "$text-muted"),
            f"  {where}  {smooth}, {'log' if self.log_scale else 'linear'}",
        ]

    def _lost_words(self) -> list[Part]:
        """What the index did not keep (past its limits), if anything."""
        lost = self._index.not_kept if self._index is not None else ""
        return [(f"  {lost}", "$warning")] if lost else []

    def _selected_words(self) -> list[Part]:
        """The selected field's name, when a field is shown."""
        if not self.shown:
            return []
        return [("  selected: ", "$text-muted"), (self.shown[self.selected], "bold")]

    def _redraw(self) -> None:
        view = self.console.view
        if view is not None:
            self.draw(view)

    @on(MetricGrid.Reshaped)
    def _reshaped(self) -> None:
        self._redraw()

    # -- keys ---------------------------------------------------------------------------

    def action_filter(self) -> None:
        field = self.query_one("#metrics-filter", Input)
        field.display, field.disabled = True, False
        field.value = self.pattern
        field.focus()

    @on(Input.Changed, "#metrics-filter")
    def _typed(self, event: Input.Changed) -> None:
        self._set_pattern(event.value)

    @on(Input.Submitted, "#metrics-filter")
    def _kept(self, event: Input.Submitted) -> None:
        self._close_filter()

    def _set_pattern(self, pattern: str) -> None:
        view = self.console.view
        try:
            matching(self._names(view) if view is not None else [], pattern)
        except ValueError as exc:
            self.error = f"{exc}; the filter stays"
        else:
            self.error = ""
            if pattern != self.pattern:
                self.pattern, self.selected = pattern, 0
        self._redraw()

    def _close_filter(self) -> None:
        field = self.query_one("#metrics-filter", Input)
        field.display, field.disabled = False, True
        self.error = ""
        self.set_focus(None)
        self._redraw()

    def action_back(self) -> None:
        field = self.query_one("#metrics-filter", Input)
        if field.display:  # Escape in the filter clears it
            self.pattern, self.selected = "", 0
            self._close_filter()
        elif self.full and self.look.cursor:
            self.look.cursor = False
            self._redraw()
        elif self.full:
            self.full = False
            self._redraw()
        elif self.pattern:
            self.pattern, self.selected = "", 0
            self._redraw()

    def action_open(self) -> None:
        if self.shown:
            self.full = True
            self._redraw()

    @on(MetricGrid.Picked)
    def _picked(self, event: MetricGrid.Picked) -> None:
        per = self.query_one(MetricGrid).per_page or 1
        index = self.selected // per * per + event.slot
        if index < len(self.shown):
            self.selected = index
            self.action_open()

    def action_move(self, dx: int, dy: int) -> None:
        if self.full and self.look.cursor and dx:  # full size, left/right move the cursor
            self.look.move(self.drawn, dx)
            self._redraw()
            return
        if self.full or not self.shown:
            return
        cols = self.query_one(MetricGrid).shape[0] or 1
        self.selected = max(0, min(len(self.shown) - 1, self.selected + dx + dy * cols))
        self._redraw()

    def action_smoothing(self, direction: int) -> None:
        self.smoothing = stepped(self.smoothing, direction)
        self._redraw()

    def action_toggle_log(self) -> None:
        self.log_scale = not self.log_scale
        self._redraw()

    def action_chart_cursor(self) -> None:
        """On the grid, open the selected chart full size with the cursor on; else toggle it."""
        if not self.shown:
            return
        if not self.full:
            self.full, self.look.cursor, self.look.step = True, False, None
        self.look.toggle_cursor()
        self._redraw()

    def action_wall_time(self) -> None:
        self.look.wall = not self.look.wall
        self._redraw()


def _rule_words(view: RunView) -> list[Part]:
    """The fields the preset's rules read, marked on their charts; hidden while blinded."""
    reads = rules_by_field(view.preset)
    if view.blinded:
        return [("  probe fields hidden (blinded)", "$text-muted")]
    if reads:
        return [(f"  {RULE_MARK} rule reads: {', '.join(reads)}", "$text-muted")]
    return []
