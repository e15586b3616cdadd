"""The dialog that picks a signal for one process of a launched run, then asks to confirm it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label

from fontaine_tui.model.processes import SIGNALS
from fontaine_tui.widgets.safe import cell

WHAT = {
    "SIGTERM": "ask it to end",
    "SIGINT": "as Ctrl-C: the engine checkpoints and ends",
    "SIGKILL": "end it at once, nothing saved",
    "SIGUSR1": "the trainer's own handler, if it has one",
}


class SignalDialog(ModalScreen[str | None]):
    """Returns the signal's name once picked and confirmed, or None."""

    DEFAULT_CSS = """
    SignalDialog { align: center middle; }
    SignalDialog #signal-pick { height: auto; }
    """
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="signal.cancel"),
        *(
            Binding(str(i), f"pick('{name}')", name, id=f"signal.{name.lower()}", show=False)
            for i, name in enumerate(SIGNALS, 1)
        ),
        Binding("y", "confirm", "Send", id="signal.confirm", show=False),
    ]

    def __init__(self, pid: int, what: str) -> None:
        super().__init__()
        self.pid, self.what = pid, what
        self.chosen: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(cell(f"Send a signal to pid {self.pid} ({self.what})"), id="signal-ask")
            with Vertical(id="signal-pick"):
                for i, name in enumerate(SIGNALS, 1):
                    yield Button(f"{i} {name}: {WHAT[name]}", id=f"pick-{name}")
            with Horizontal(id="signal-confirm"):
                yield Button("Send (y)", id="send", variant="error")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#signal-confirm").display = False

    def on_button_pressed(self, event: Button.Pressed) -> None:
        bid = event.button.id or ""
        if bid.startswith("pick-"):
            self.action_pick(bid.removeprefix("pick-"))
        elif bid == "send":
            self.action_confirm()
        else:
            self.dismiss(None)

    def action_pick(self, name: str) -> None:
        self.chosen = name
        self.query_one("#signal-ask", Label).update(
            cell(f"Send {name} to pid {self.pid} ({self.what})? y sends, escape cancels")
        )
        self.query_one("#signal-pick").display = False
        self.query_one("#signal-confirm").display = True
        self.query_one("#send", Button).focus()

    def action_confirm(self) -> None:
        if self.chosen is not None:
            self.dismiss(self.chosen)

    def action_cancel(self) -> None:
        self.dismiss(None)
