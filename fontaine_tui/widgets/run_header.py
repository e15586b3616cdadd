"""The monitor's header: run, preset, status, step of total, pace, ETA, GPU-hours."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import ProgressBar

from fontaine_tui.model.readout import duration, gpu_hours_text, pace_text
from fontaine_tui.widgets.quiet import QuietStatic
from fontaine_tui.widgets.safe import assemble

if TYPE_CHECKING:
    from fontaine_tui.model.view import RunView

TONE_STYLE = {
    "live": "bold $success",
    "waiting": "bold $warning",
    "watching": "bold $accent",
    "stopped": "bold $error",
}


class RunHeader(Vertical):
    DEFAULT_CSS = """
    RunHeader { height: auto; padding: 0 1; }
    RunHeader Horizontal { height: 1; }
    RunHeader #title { height: 1; }
    RunHeader ProgressBar { width: 40; }
    RunHeader #pace { width: 1fr; padding-left: 1; }
    """

    def compose(self) -> ComposeResult:
        yield QuietStatic(id="title")
        with Horizontal():
            yield ProgressBar(total=1, show_eta=False, id="bar")
            yield QuietStatic(id="pace")

    def show(self, view: RunView) -> None:
        p = view.progress
        style = TONE_STYLE.get(view.status_tone, "bold")
        self.query_one("#title", QuietStatic).show_content(
            assemble(
                (view.name or "?", "bold"),
                "  preset ",
                (view.preset.name, "bold"),
                f" ({view.preset.sha256[:12]})  ",
                (view.status.upper(), style),
                f"  {view.label}",
            )
        )
        bar = self.query_one("#bar", ProgressBar)
        total, done = max(p.total, 1), min(p.step, max(p.total, 1))
        if (bar.total, bar.progress) != (total, done):
            bar.update(total=total, progress=done)
        eta = duration(p.eta_s) if p.step < p.total else "done"
        self.query_one("#pace", QuietStatic).show_content(
            assemble(
                ("step ", "dim"),
                (f"{p.step}", "bold"),
                f" / {p.total}  ",
                pace_text(p),
                "  ETA ",
                (eta, "bold"),
                "  ",
                gpu_hours_text(p),
                *_locked(view),
            )
        )


def _locked(view: RunView) -> tuple[str | tuple[str, str], ...]:
    """The "locked at step S" part, once the decision lock holds before the endpoint."""
    lock = None if view.blinded else view.latest.decision
    if lock is None or lock.step is None or lock.step >= view.latest.endpoint_step:
        return ()
    label = view.latest.label_of(lock.label or "")
    return ("  decision ", (f"locked at step {lock.step} ({label})", "bold"))
