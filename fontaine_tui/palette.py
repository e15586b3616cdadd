"""The command palette (ctrl+p), built from the bindings themselves.

Every binding with an id and a tooltip becomes a command of the same name, help and action,
so the palette can never describe a key the console does not have.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType


def _bindings(classes: Iterable[type]) -> Iterator[Binding]:
    seen: set[str] = set()
    for cls in classes:
        entries: list[BindingType] = list(getattr(cls, "BINDINGS", []))
        for b in entries:
            if isinstance(b, Binding) and b.id and b.tooltip and b.id not in seen:
                seen.add(b.id)
                yield b


def commands(app: App[int], screens: Iterable[type]) -> Iterator[SystemCommand]:
    """One command per binding of the app and of `screens` (the mode screens)."""
    for b in _bindings([type(app), *screens]):
        action = b.action if b.action.startswith(("app.", "screen.")) else f"app.{b.action}"
        key = b.key_display or b.key.split(",")[0]

        async def run(action: str = action) -> None:
            await app.run_action(action)

        yield SystemCommand(f"{b.description} ({key})", b.tooltip, run)
