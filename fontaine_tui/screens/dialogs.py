"""Modal dialogs: a note for the review log, a review line to confirm, and a live run on quit."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from fontaine_tui.widgets.safe import assemble


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


class ConfirmDialog(ModalScreen[bool]):
    """Asks before a line is appended to review.jsonl for good: True on y, False otherwise.

    Only y appends: the key that opened it, pressed again, does not (a doubled keystroke
    must not write a permanent line), and n or escape cancel. Enter answers the focused
    button, and Cancel has the focus."""

    DEFAULT_CSS = "ConfirmDialog { align: center middle; }"
    BINDINGS = [
        Binding("y", "choose(True)", "Append", id="confirm.yes"),
        Binding("n,escape", "choose(False)", "Cancel", id="confirm.no"),
    ]

    def __init__(self, question: str, detail: str) -> None:
        super().__init__()
        self.question, self.detail = question, detail

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(assemble(self.question), id="confirm-question")  # a path: never markup
            yield Static(assemble((self.detail, "$text-muted")))
            with Horizontal():
                yield Button("Append (y)", id="yes", variant="primary")
                yield Button("Cancel (n, esc)", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_choose(self, yes: bool) -> None:
        self.dismiss(yes)


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
