"""Modal dialogs: a note for the review log, and what to do with a live run on quit."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label


class NoteDialog(ModalScreen[str | None]):
    """Returns the note text, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="note.cancel")]

    def __init__(
        self,
        prompt: str = "Note for review.jsonl (enter saves, escape cancels)",
        placeholder: str = "what you saw",
    ) -> None:
        super().__init__()
        self.prompt, self.placeholder = prompt, placeholder

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.prompt)
            yield Input(placeholder=self.placeholder, id="note-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class QuitDialog(ModalScreen[str | None]):
    """Returns "stop", "detach", or None (stay)."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="quit.cancel"),
        Binding("s", "choose('stop')", "Stop run", id="quit.stop"),
        Binding("d", "choose('detach')", "Detach", id="quit.detach"),
    ]

    def __init__(self, pid: int | None, what: str | None = None) -> None:
        super().__init__()
        self.pid = pid
        self.what = what or f"pid {pid}"  # "slurm job N" for a run submitted to Slurm

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"The launched run ({self.what}) is still running.")
            yield Label("Stop it, or detach and leave it running (it stays in the registry)?")
            with Horizontal():
                yield Button("Stop the run (s)", id="stop", variant="error")
                yield Button("Detach (d)", id="detach", variant="primary")
                yield Button("Cancel (esc)", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None if event.button.id == "cancel" else event.button.id)

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)

    def action_cancel(self) -> None:
        self.dismiss(None)
