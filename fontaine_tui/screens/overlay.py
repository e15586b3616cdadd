"""Overlay mode: the runs pinned in the runs mode, their train losses and reads in one view.

Each run is drawn in its own colour, named with its state in the legend. `a` overlays any
run folder or store by its path, registered or not. Past six runs the colours come round
again with another marker, shown beside the run's dot; the legend scrolls (up / down) when
its lines outgrow its room. The pinned runs are followed in workers (model/overlay.py); this
screen redraws when one of them changed, the charts at most once per the app's chart interval.
"""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from fontaine_tui.core.charts.loss import EMA_DEFAULT, stepped
from fontaine_tui.core.charts.overlay import OverlayRun, overlay_losses, overlay_probes
from fontaine_tui.model.runs import open_target
from fontaine_tui.screens.base import ConsoleScreen
from fontaine_tui.screens.dialogs import NoteDialog
from fontaine_tui.widgets.chart import Chart
from fontaine_tui.widgets.keys_footer import KeysFooter
from fontaine_tui.widgets.safe import assemble, notify

LOOK_S = 0.5  # how often the pinned runs are looked at for a change
REGISTRY_S = 5.0  # how often the registry's word on them is taken (a fleet look asks every host)


class OverlayScreen(ConsoleScreen):
    TITLE = "overlay"
    BINDINGS = [
        Binding(
            "e",
            "smoothing(1)",
            "Smoother",
            id="overlay.smoother",
            tooltip="More EMA smoothing of the overlaid train losses (off, 0.6 ... 0.99)",
        ),
        Binding(
            "E",
            "smoothing(-1)",
            "Rougher",
            id="overlay.rougher",
            show=False,
            tooltip="Less EMA smoothing of the overlaid train losses (down to off)",
        ),
        Binding(
            "a",
            "add_run",
            "Add run",
            id="overlay.add",
            show=False,
            tooltip="Overlay a run folder or store by its path (here, or host:/path), "
            "registered or not",
        ),
        Binding(
            "down",
            "legend(1)",
            "Legend down",
            id="overlay.legend_down",
            show=False,
            tooltip="Scroll the legend down a line, where it holds more runs than it shows",
        ),
        Binding(
            "up",
            "legend(-1)",
            "Legend up",
            id="overlay.legend_up",
            show=False,
            tooltip="Scroll the legend up a line",
        ),
    ]
    DEFAULT_CSS = """
    OverlayScreen #overlay-legend-box { height: auto; max-height: 6; }
    """

    smoothing = EMA_DEFAULT
    _key: object = None
    _registry_at = -REGISTRY_S

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="overlay-legend-box", can_focus=False):
            yield Static(id="overlay-legend")
        yield Chart(id="overlay-losses", min_interval=self.console.chart_s)
        yield Chart(id="overlay-probes", min_interval=self.console.chart_s)
        yield Static(id="overlay-note")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.set_interval(LOOK_S, self._look)

    def on_screen_resume(self) -> None:
        self._key = None
        self._look()

    def _look(self) -> None:
        if not self.is_current:
            return
        overlay = self.console.overlay
        now = time.monotonic()
        if now - self._registry_at >= REGISTRY_S:
            self._registry_at = now
            overlay.refresh(self.console.registry_entries())
        key = (overlay.key(), self.smoothing)
        if key != self._key:
            self._key = key
            self.draw(overlay.runs())

    def draw(self, runs: list[OverlayRun]) -> None:
        losses, probes = overlay_losses(runs, self.smoothing), overlay_probes(runs)
        self.query_one("#overlay-losses", Chart).show(losses, key=self._key)
        self.query_one("#overlay-probes", Chart).show(probes, key=self._key)
        parts: list[str | tuple[str, str]] = []
        for run in runs:
            step = run.store.last_step if run.store.steps else 0
            parts += [
                ("● ", run.color) if not run.marker else (f"●{run.marker} ", run.color),
                (run.name, "bold"),
                f"  {run.state}  step {step}  {run.read_words}\n",
            ]
        if not runs:
            parts.append(
                "no run pinned: in the runs mode (r), space pins a run;"
                " a overlays any run folder by its path"
            )
        self.query_one("#overlay-legend", Static).update(assemble(*parts))
        self.query_one("#overlay-note", Static).update(
            assemble(("bounds: ", "$text-muted"), probes.note)
        )

    def action_add_run(self) -> None:
        """Ask for a run folder or store path and overlay it (model/overlay.py's `add`)."""
        dialog = NoteDialog(
            "Run folder or store to overlay, here or host:/path (enter adds, escape cancels)",
            "runs/r7",
        )
        self.app.push_screen(dialog, self.add_run)

    def add_run(self, path: str | None) -> None:
        """Overlay the run at `path`, followed in a worker as a pinned run is; say how it went."""
        if path is None:
            return
        console = self.console
        pin, outcome = console.overlay.add(
            path,
            lambda e: open_target(console.session, e.target, console.registry, console.ssh_options),
        )
        if pin is not None:
            self.app.run_worker(console.overlay.follow(pin), group="overlay", exit_on_error=False)
        notify(self.app, outcome.message, severity=outcome.severity, timeout=4)
        self._key = None
        self._look()

    def action_legend(self, lines: int) -> None:
        box = self.query_one("#overlay-legend-box", VerticalScroll)
        box.scroll_to(y=box.scroll_y + lines, animate=False)

    def action_smoothing(self, direction: int) -> None:
        self.smoothing = stepped(self.smoothing, direction)
        self._look()
