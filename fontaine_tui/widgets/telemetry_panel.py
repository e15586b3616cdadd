"""Per-GPU util, memory and power, host RAM, engine PSS/CPU, their history, and the data wait.

The history (the recorder's sidecar, core/host/history.py) is drawn as sparklines, one block
of lines per node, under the live look (a replay has no live look, only the history).

The panel sits in a frame (`TelemetryBox`) as tall as the panel, but never taller than what
the warnings, events and attempts panels below it leave of the monitor's side column: beyond
that it scrolls, so a run's history never pushes them off the screen.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll

from fontaine_tui.core.host.history import History
from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.text import gib
from fontaine_tui.widgets.quiet import QuietStatic
from fontaine_tui.widgets.safe import Part, assemble
from fontaine_tui.widgets.sparkline_text import history_lines

SPARK_MIN = 8  # columns of a sparkline, at the least
SPARK_ROOM = 22  # the columns a history line takes beside its sparkline (label, value)


def _pct(x: float | None, places: int = 0) -> str:
    return "—" if x is None else f"{x:.{places}f}%"


class TelemetryBox(VerticalScroll):
    """The panel's frame: the room left below (1fr), at most the panel's height; it scrolls."""

    DEFAULT_CSS = """
    TelemetryBox { height: 1fr; min-height: 5; border: round $panel;
                   border-title-color: $text-muted; scrollbar-size-vertical: 1; }
    """

    def __init__(self) -> None:
        # no focus: the keys stay with the engine's output; the mouse wheel scrolls it
        super().__init__(can_focus=False)

    def compose(self) -> ComposeResult:
        yield TelemetryPanel(id="telemetry")

    def on_mount(self) -> None:
        self.border_title = "telemetry"

    def fit(self, panel_height: int) -> None:
        """Grow to the panel's `panel_height` and no further (the room left caps it below)."""
        tall = panel_height + self.styles.gutter.height
        now = self.styles.max_height
        if now is None or now.value != tall:
            self.styles.max_height = tall


class TelemetryPanel(QuietStatic):
    DEFAULT_CSS = """
    TelemetryPanel { height: auto; min-height: 3; padding: 0 1; }
    """

    _drawn: tuple[History, int, str, list[tuple[str, bool]]] | None = None  # the history's lines
    _args: tuple[object, ...] | None = None  # show()'s arguments, drawn again on a resize

    def on_resize(self) -> None:
        if isinstance(self.parent, TelemetryBox):
            self.parent.fit(self.outer_size.height)
        drawn, args = self._drawn, self._args
        if drawn is not None and args is not None and drawn[1] != self._spark_width():
            self.show(*args)  # type: ignore[arg-type]  # the sparklines fit the new width

    def _spark_width(self) -> int:
        return max(SPARK_MIN, self.content_size.width - SPARK_ROOM)

    def show(
        self,
        snap: TelemetrySnapshot | None,
        data_frac: float | None,
        starved: bool = False,
        reason: str = "",
        history: History | None = None,
        history_note: str = "",
        who: str = "engine",
    ) -> None:
        """Show a telemetry snapshot and the data-wait fraction.

        `snap` is None when there is none, with `reason` saying why. `starved` means the data
        wait is over the preset's gate (decided by the model, as the starvation rule
        decides). `history` is the run's recorded history (None: not read), `history_note`
        one line on what of it could not be read. `who` names the run's process: "engine",
        or "command" for a preset's own [command] trainer.
        """
        self._args = (snap, data_frac, starved, reason, history, history_note, who)
        wait = "—" if data_frac is None else f"{data_frac * 100:.1f}%"
        parts = [
            *_live(snap, reason, history, who),
            *self._history(history, history_note, who),
            "data-wait fraction ",
            (wait, "$error" if starved else ""),
        ]
        self.show_content(assemble(*parts))

    def _history(self, history: History | None, note: str, who: str) -> list[Part]:
        """The recorded history's lines, or that there is none; then what could not be read."""
        parts: list[Part] = []
        if history is not None and history.nodes:
            parts += self._history_lines(history, who)
        elif history is not None and history.missing:
            parts += [("no telemetry history (no telemetry.jsonl)", "$text-muted"), "\n"]
        if note:
            parts += [(note, "$warning"), "\n"]
        return parts

    def _history_lines(self, history: History, who: str) -> list[Part]:
        """The history's sparklines at the panel's width, drawn once a read, a width and a who."""
        width = self._spark_width()
        drawn = self._drawn
        if drawn is None or drawn[0] is not history or drawn[1:3] != (width, who):
            drawn = self._drawn = (history, width, who, history_lines(history, width, who))
        return [part for text, muted in drawn[3] for part in (_muted(text, muted), "\n")]


def _muted(text: str, muted: bool) -> Part:
    return (text, "$text-muted") if muted else text


def _live(
    snap: TelemetrySnapshot | None, reason: str, history: History | None, who: str
) -> list[Part]:
    """The live look; without one, why (and that what follows is the recorded history)."""
    if snap is not None:
        return [*_gpus(snap), *_ram(snap), *_process(snap, who)]
    why = reason or "none for this source"
    if history is not None and history.nodes:
        return [
            ("recorded history (no live look: ", "$text-muted"),
            (f"{why})", "$text-muted"),
            "\n",
        ]
    return [(f"no telemetry ({why})", "$text-muted"), "\n"]


def _gpus(snap: TelemetrySnapshot) -> list[Part]:
    """A line per GPU: util, memory, power; else why there are none."""
    if not snap.gpus:
        return [(snap.gpu_status or "no GPU telemetry", "$text-muted"), "\n"]
    lines: list[Part] = []
    for g in snap.gpus:
        used, total = gib(g.mem_used, unit=False), gib(g.mem_total, unit=False)
        power = "—" if g.power_w is None else f"{g.power_w:.0f} W"
        lines.append(
            f"GPU{g.index} {g.name[:20]}  util {_pct(g.util_pct)}  "
            f"mem {used}/{total} GiB  {power}  {g.uuid[:12]}\n"
        )
    return lines


def _ram(snap: TelemetrySnapshot) -> list[Part]:
    """The host's RAM used and free, or why it is unknown."""
    ram = snap.ram
    if ram is None:
        return [(f"host RAM unknown ({snap.ram_reason})", "$text-muted"), "\n"]
    used = gib(ram.total - ram.available, unit=False)
    return [
        f"host RAM {used}/{gib(ram.total, unit=False)} GiB used "
        f"({gib(ram.available, unit=False)} GiB free, {ram.source})\n"
    ]


def _process(snap: TelemetrySnapshot, who: str) -> list[Part]:
    """The run's process's memory and CPU, or why they are not known."""
    proc = snap.process
    if proc is None:
        return [(f"{who}: {snap.process_reason}", "$text-muted"), "\n"]
    return [
        f"{who} pid {proc.pid}: {proc.mem_kind} {gib(proc.mem, unit=False)} GiB, "
        f"CPU {_pct(proc.cpu_pct)} ({proc.processes} processes)\n"
    ]
