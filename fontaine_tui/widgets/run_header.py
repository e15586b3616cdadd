"""The monitor's header: run, status, the read, preset; step of total, pace, ETA, GPU-hours.

Its first line carries what a glance needs first: the run's state in words and a colour that
means what it says, and the latest read (its label, PROVISIONAL or final, the decision lock),
or what the read still waits for. Each field has a whole form and shorter ones, each with a
priority (`fit`): where the terminal is narrow a field takes a shorter form or is left out
whole, the less important first, never cut mid-word."""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import ProgressBar
from textual.widgets._progress_bar import Bar

from fontaine_tui.core.runfolder import LOG
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict.text import read_words, waiting
from fontaine_tui.model.readout import duration, gpu_hours_text, pace_text
from fontaine_tui.widgets.quiet import QuietStatic
from fontaine_tui.widgets.safe import Part, assemble
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

Form = tuple[int, list[Part]]  # (priority: 0 always shown, 1 next, ...; the parts)


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
        width = max(20, self.app.size.width - 2)  # the header spans the screen
        title = assemble(*fit(_title_fields(view), width))
        self.query_one("#title", QuietStatic).show_content(title)
        bar_w = self._show_bar(view, width)
        pace = assemble(*fit(_pace_fields(view), max(20, width - bar_w - 1)))
        self.query_one("#pace", QuietStatic).show_content(pace)

    def _show_bar(self, view: RunView, width: int) -> int:
        """The progress bar, sized to leave the pace room at 80 columns; its width."""
        p = view.progress
        bar = self.query_one("#bar", ProgressBar)
        bar_w = BAR_WIDE if width >= 118 else BAR_NARROW
        if bar.styles.width is None or bar.styles.width.value != bar_w:
            bar.styles.width = bar_w
            bar.query_one(Bar).styles.width = bar_w - 8  # and its percentage beside it
        total, done = max(p.total, 1), min(p.step, max(p.total, 1))
        if (bar.total, bar.progress) != (total, done):
            bar.update(total=total, progress=done)
        return bar_w


def _title_fields(view: RunView) -> list[list[Form]]:
    """The title line's fields, each with its forms, the whole first.

    Each form has its priority (0: always shown): the shortest name and the status; the
    read's short form, the lock, the whole name, the preset, which folder; then the read
    whole, the preset's sha, the folder's path."""
    name = literal(view.name or "?")  # as it is drawn: measured in what it shows
    lock = list(_locked(view))
    read = _read_forms(view)
    preset = literal(view.preset.name)
    return [
        [
            (3, [(name, "bold")]),
            (3, [(shorter(name, 24), "bold")]),
            (0, [(shorter(name, 14), "bold")]),
        ],
        [(0, ["  ", (view.status.upper(), TONE_STYLE.get(view.status_tone, "bold"))])],
        [(6, read[0]), (6, read[1]), (1, read[-1])],
        [(3, lock), (2, list(_locked(view, short=True)))] if lock else [],
        [
            (7, ["  preset ", (preset, "bold"), f" ({view.preset.sha256[:12]})"]),
            (4, ["  preset ", (preset, "bold")]),
        ],
        [(8, [f"  {literal(view.label)}"]), (5, [f"  {short_source(literal(view.label))}"])],
    ]


def _read_forms(view: RunView) -> list[list[Part]]:
    """The read's forms, the whole first: its words, or that it is blinded until when."""
    v = view.latest
    if view.blinded:
        return [["  read ", (f"BLINDED until step {v.endpoint_step}", "bold")]] * 3
    shown = "$text-muted" if waiting(v) else LABEL_STYLE.get(v.verdict, "bold")
    return [["  read ", (read_words(v, size), shown)] for size in (0, 1, 2)]


def _pace_fields(view: RunView) -> list[list[Form]]:
    """The line beside the bar: step of total, pace, ETA, GPU-hours.

    Before the first record, what the engine says it does is the news, then the step."""
    p = view.progress
    if view.engine_status:
        said = literal(view.engine_status)
        return [
            [(1, [("engine: ", "bold $warning"), said]), (0, [said])],
            [(2, ["  ", ("step ", "dim"), (f"{p.step}", "bold"), f" / {p.total}"])],
        ]
    eta = duration(p.eta_s) if p.step < p.total else "done"
    return [
        [(0, [("step ", "dim"), (f"{p.step}", "bold"), f" / {p.total}"])],
        [(3, ["  ", pace_text(p)]), (2, ["  ", pace_text(p).split(" (")[0]])],
        [(0, ["  ETA ", (eta, "bold")])],
        [(1, ["  ", gpu_hours_text(p)])],
    ]


BAR_WIDE, BAR_NARROW = 40, 20


def shorter(name: str, most: int) -> str:
    """`name` in at most `most` cells: its start and its end, an ellipsis between.

    Two runs often differ only at the end of their names. A wide character takes two cells,
    and a combining mark stays with its letter."""
    if cell_len(name) <= most:
        return name
    clusters: list[str] = []  # a character with the marks that combine with it: never split
    for ch in name:
        if clusters and unicodedata.combining(ch):
            clusters[-1] += ch
        else:
            clusters.append(ch)
    tail_cells = (most - 1) // 2
    head, tail = "", ""
    for c in clusters:
        if cell_len(head + c) > most - 1 - tail_cells:
            break
        head += c
    for c in reversed(clusters):
        if cell_len(c + tail) > most - 1 - cell_len(head):
            break
        tail = c + tail
    return f"{head}…{tail}"


def short_source(label: str) -> str:
    """A source's label with its path cut to the run's folder: `local …/run`.

    It says which run is shown where the whole path ("local /a/b/run", "replay
    run/train_log.jsonl") does not fit."""
    kind, _, path = label.partition(" ")
    parts = [p for p in path.rstrip("/").split("/") if p]
    if len(parts) <= 1:
        return label
    return f"{kind} …/{parts[-2] if parts[-1] == LOG else parts[-1]}"


def fit(fields: list[list[Form]], width: int) -> list[Part]:
    """The fields in their order, each in the form that fits `width` by priority.

    A field's forms come the whole first, each with a priority (0 first). Going through all
    forms by priority, a form is taken where it is longer than the field's form so far and
    the line still fits in `width`; priority 0 is always taken. So the read's short form
    comes before the run's whole name, and that before the preset: a field is whole or left
    out, never cut mid-word.
    """
    chosen: dict[int, int] = {}  # field -> its form's index
    used = 0
    for priority, k, i in _by_priority(fields):
        if i in chosen and chosen[i] <= k:
            continue  # it has this form or a longer one
        now = _cells(fields[i][chosen[i]][1]) if i in chosen else 0
        grown = used - now + _cells(fields[i][k][1])
        if priority == 0 or grown <= width:
            chosen[i], used = k, grown
    return [p for i, k in sorted(chosen.items()) for p in fields[i][k][1]]


def _cells(parts: list[Part]) -> int:
    """The terminal cells `parts` take."""
    return sum(cell_len(p if isinstance(p, str) else p[0]) for p in parts)


def _by_priority(fields: list[list[Form]]) -> list[tuple[int, int, int]]:
    """Every form as (priority, its index in its field, its field's index), in that order."""
    return sorted(
        (priority, k, i) for i, forms in enumerate(fields) for k, (priority, _) in enumerate(forms)
    )


def _locked(view: RunView, short: bool = False) -> tuple[str | tuple[str, str], ...]:
    """The "locked at step S" part, once the decision lock holds before the endpoint.

    `short`: the few words a narrow header keeps (the class is the read's)."""
    lock = None if view.blinded else view.latest.decision
    if lock is None or lock.step is None or lock.step >= view.latest.endpoint_step:
        return ()
    label = view.latest.label_of(lock.label or "")
    if short:
        return ("  ", (f"locked at {lock.step}", "bold"))
    return ("  decision ", (f"locked at step {lock.step} ({label})", "bold"))
