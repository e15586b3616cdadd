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


def commands(app: App[int], screens: Iterable[type], shown: object) -> Iterator[SystemCommand]:
    """One command per binding of the app and of `screens` (the mode screens).

    A binding whose action the app runs is offered in every mode. One whose action is its
    screen's own (the monitor's smoothing, the metric browser's filter) is offered only while
    that screen is `shown`, and runs there: from another mode it would do nothing.
    """
    for b in _bindings([type(app), *screens]):
        action = _palette_action(b, screens, shown)
        if action is None:
            continue
        key = b.key_display or b.key.split(",")[0]

        async def run(action: str = action) -> None:
            await app.run_action(action)

        yield SystemCommand(f"{b.description} ({key})", b.tooltip, run)


def _palette_action(b: Binding, screens: Iterable[type], shown: object) -> str | None:
    """The action the palette runs for `b`: the app's, or while its screen is shown, the screen's.

    None for a screen's own action while another screen is shown."""
    if b.action.startswith(("app.", "screen.")):
        return b.action
    owner = next((c for c in screens if b in getattr(c, "BINDINGS", [])), None)
    if owner is None or not hasattr(owner, f"action_{b.action.split('(')[0]}"):
        return f"app.{b.action}"
    return f"screen.{b.action}" if isinstance(shown, owner) else None
