"""Active warnings: severity, since when, and the message.

The message says its numbers in words with their units (`core.watch.alerts`).
"""

from __future__ import annotations

from fontaine_tui.core.watch.alerts import RunWarning, warning_text
from fontaine_tui.widgets.quiet import QuietStatic
from fontaine_tui.widgets.safe import assemble

SEVERITY_STYLE = {
    "alert": "bold $error",
    "error": "bold $error",
    "warn": "bold $warning",
    "warning": "bold $warning",
    "info": "$accent",
}


class WarningsPanel(QuietStatic):
    DEFAULT_CSS = """
    WarningsPanel { height: auto; min-height: 3; border: round $panel; padding: 0 1;
                    border-title-color: $text-muted; }
    """

    def on_mount(self) -> None:
        self.border_title = "warnings"

    def show(
        self, warnings: tuple[RunWarning, ...], note: str = "", evidence: tuple[str, ...] = ()
    ) -> None:
        """Show what the log itself got wrong, the active warnings and the follower's note.

        `evidence` is what the log itself got wrong (records out of order, conflicting
        probes, a meta record of another run), one line each.
        """
        parts: list[tuple[str, str] | str] = []
        for line in evidence:
            parts += [("LOG    ", "bold $warning"), line, "\n"]
        if not warnings and not evidence:
            parts.append(("no warnings", "$text-muted"))
        for w in warnings:
            sev = w.severity
            parts += [
                (f"{sev.upper():6}", SEVERITY_STYLE.get(sev.lower(), "bold")),
                f" {warning_text(w)}",
                "\n",
            ]
        if note:
            parts += ["\n", ("follower: ", "$text-muted"), note]
        self.show_content(assemble(*parts))
