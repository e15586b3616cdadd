"""The run's attempts on the monitor, as a timeline of each launch and resume.

Each attempt shows when it began and how it ended (core/run/attempts.py). The panel is
hidden for a run with no attempts.jsonl (a replay, a run another trainer wrote, a run over
SSH).
"""

from __future__ import annotations

from fontaine_tui.core.run.attempts import Attempt
from fontaine_tui.core.text import literal
from fontaine_tui.widgets.quiet import QuietStatic
from fontaine_tui.widgets.safe import assemble

CAUSE_STYLE = {
    "finished": "$success",
    "stopped": "$warning",
    "running": "bold $accent",
    "unknown": "$text-muted",
}
SHOWN = 4  # the latest attempts; earlier ones are counted


def attempt_line(a: Attempt) -> tuple[str, str]:
    """("#2 resume 05:10:02 → killed at step 37", detail)."""
    began = a.began_at[11:19] if len(a.began_at) >= 19 else a.began_at
    step = "" if a.last_step is None else f" at step {a.last_step}"
    kind = a.kind if a.restart is None else f"restart {a.restart[0]}/{a.restart[1]}"
    return f"#{a.number} {kind} {began} → {a.cause}{step}", literal(a.detail)


class AttemptsPanel(QuietStatic):
    DEFAULT_CSS = """
    AttemptsPanel { height: auto; border: round $panel; padding: 0 1;
                    border-title-color: $text-muted; }
    """

    def on_mount(self) -> None:
        self.border_title = "attempts"

    def show(self, attempts: tuple[Attempt, ...]) -> None:
        self.display = bool(attempts)
        if not attempts:
            return
        parts: list[tuple[str, str] | str] = []
        shown = attempts[-SHOWN:]
        if len(attempts) > len(shown):
            parts.append((f"({len(attempts) - len(shown)} earlier)\n", "$text-muted"))
        for i, a in enumerate(shown):
            head, detail = attempt_line(a)
            style = CAUSE_STYLE.get(a.cause, "bold $error")  # any other end is an incident
            parts += ["\n" if i else "", (head, style)]
            if detail and a.cause not in ("finished", "running"):
                parts.append((f": {detail[:120]}", "$text-muted"))
        self.border_title = f"attempts ({len(attempts)})"
        self.show_content(assemble(*parts))
