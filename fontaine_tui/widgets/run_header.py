"""The monitor's header: run, status, the read, preset; step of total, pace, ETA, GPU-hours.

Its first line carries what a glance needs first: the run's state in words and a colour that
means what it says, and the latest read (its label, PROVISIONAL or final, the decision lock),
or what the read still waits for. Where the terminal is narrow, whole fields are dropped by
priority (the source, then the preset, then the lock), never cut mid-word."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import ProgressBar

from fontaine_tui.core.verdict.text import read_words, waiting
from fontaine_tui.model.readout import duration, gpu_hours_text, pace_text
from fontaine_tui.widgets.quiet import QuietStatic
from fontaine_tui.widgets.safe import assemble
from fontaine_tui.widgets.verdict_panel import LABEL_STYLE

if TYPE_CHECKING:
    from fontaine_tui.model.view import RunView

TONE_STYLE = {
    "live": "bold $success",
    "waiting": "bold $warning",
    "watching": "bold $accent",
    "finished": "bold $success",
    "stopped": "bold $warning",
    "failed": "bold $error",
}

Part = tuple[str, str] | str


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

    _view: RunView | None = None

    def on_resize(self) -> None:
        if self._view is not None:  # the fields that fit change with the width
            self.show(self._view)

    def show(self, view: RunView) -> None:
        self._view = view
        p = view.progress
        style = TONE_STYLE.get(view.status_tone, "bold")
        v = view.latest
        read: list[list[Part]]  # the read's forms, the whole first: the first that fits
        if view.blinded:
            read = [["  read ", (f"BLINDED until step {v.endpoint_step}", "bold")]]
        else:
            shown = "$text-muted" if waiting(v) else LABEL_STYLE.get(v.verdict, "bold")
            read = [["  read ", (read_words(v, size), shown)] for size in (0, 1, 2)]
        fields: list[tuple[int, list[list[Part]]]] = [  # (priority: 0 kept first, forms)
            (0, [[(view.name or "?", "bold")]]),
            (0, [["  ", (view.status.upper(), style)]]),
            (1, read),
            (2, [list(_locked(view))]),
            (
                3,
                [
                    ["  preset ", (view.preset.name, "bold"), f" ({view.preset.sha256[:12]})"],
                    ["  preset ", (view.preset.name, "bold")],
                ],
            ),
            (4, [[f"  {view.label}"]]),
        ]
        self.query_one("#title", QuietStatic).show_content(
            assemble(*fit(fields, max(20, (self.size.width or self.app.size.width) - 2)))
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
            )
        )


def fit(fields: list[tuple[int, list[list[Part]]]], width: int) -> list[Part]:
    """The fields that fit in `width`, in their order, the most important placed first.

    Each field has one or more forms, the whole first: it takes the first form that fits in
    what is left, or is left out whole (a priority-0 field is always shown, in its last form).
    """

    def size(parts: list[Part]) -> int:
        return sum(len(p if isinstance(p, str) else p[0]) for p in parts)

    chosen: dict[int, list[Part]] = {}
    used = 0
    for i in sorted(range(len(fields)), key=lambda i: fields[i][0]):
        priority, forms = fields[i]
        form = next((f for f in forms if used + size(f) <= width), None)
        if form is None and priority == 0:
            form = forms[-1]
        if form is not None:
            chosen[i] = form
            used += size(form)
    return [p for i in range(len(fields)) if i in chosen for p in chosen[i]]


def _locked(view: RunView) -> tuple[str | tuple[str, str], ...]:
    """The "locked at step S" part, once the decision lock holds before the endpoint."""
    lock = None if view.blinded else view.latest.decision
    if lock is None or lock.step is None or lock.step >= view.latest.endpoint_step:
        return ()
    label = view.latest.label_of(lock.label or "")
    return ("  decision ", (f"locked at step {lock.step} ({label})", "bold"))
