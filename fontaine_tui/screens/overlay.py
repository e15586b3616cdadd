"""Overlay mode: the runs pinned in the runs mode, their train losses and reads in one view.

Each run is drawn in its own colour, named with its state in the legend. The pinned runs
are followed in workers (model/overlay.py); this screen redraws when one of them changed,
the charts at most once per the app's chart interval.
"""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from fontaine_tui.core.charts.loss import EMA_DEFAULT, stepped
from fontaine_tui.core.charts.overlay import OverlayRun, overlay_losses, overlay_probes
from fontaine_tui.screens.base import ConsoleScreen
from fontaine_tui.widgets.chart import Chart
from fontaine_tui.widgets.keys_footer import KeysFooter
from fontaine_tui.widgets.safe import assemble

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
    ]

    smoothing = EMA_DEFAULT
    _key: object = None
    _registry_at = -REGISTRY_S

    def compose(self) -> ComposeResult:
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
                ("● ", run.color),
                (run.name, "bold"),
                f"  {run.state}  step {step}  {run.read_words}\n",
            ]
        if not runs:
            parts.append("no run pinned: in the runs mode (r), space pins a run; pin two or more")
        self.query_one("#overlay-legend", Static).update(assemble(*parts))
        self.query_one("#overlay-note", Static).update(
            assemble(("bounds: ", "$text-muted"), probes.note)
        )

    def action_smoothing(self, direction: int) -> None:
        self.smoothing = stepped(self.smoothing, direction)
        self._look()
