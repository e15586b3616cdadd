"""The one way a widget shows a string: literally, never obeyed or read as markup.

Every string a widget shows goes through here. What came from a log, a preset, the
registry, a file name or an error message is shown literally (`core.text`), never obeyed by
the terminal and never read as markup.
"""

from __future__ import annotations

from textual.content import Content

from fontaine_tui.core.text import literal, literal_block

# a piece of a widget's text for `assemble`: plain, or with its style ("$text-muted")
Part = tuple[str, str] | str


def assemble(*parts: Part | Content) -> Content:
    """`Content.assemble`, with every text part made literal.

    Our own text has nothing to escape, so it is unchanged.
    """
    safe: list[Part | Content] = []
    for part in parts:
        if isinstance(part, str):
            safe.append(literal_block(part))
        elif isinstance(part, tuple):
            safe.append((literal_block(part[0]), part[1]))
        else:
            safe.append(part)
    return Content.assemble(*safe)


def cell(value: object) -> str:
    """A table cell or a one-line label."""
    return literal(str(value))


def notify(app: object, message: str, **kw: object) -> None:
    """`App.notify` with the message literal and markup off (a path may hold '[')."""
    app.notify(literal_block(message), markup=False, **kw)  # type: ignore[attr-defined]
