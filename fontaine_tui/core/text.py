"""Text from outside the program, made safe to show, and the one way sizes are written.

Outside text is text that did not come from our own code: a log line, a preset's
interpretation text, a registry field, a file name, an error message echoing a user path.

Every control character (C0 but tab and, in blocks, newline; ESC; DEL; C1) and every
bidirectional override or isolate becomes a visible escape (`\\x1b`, `\\u202e`), so nothing in
the text can steer the terminal (OSC 52 clipboard writes, colours, cursor moves) or reorder
what the reader sees. A byte that was not UTF-8 (a lone surrogate, as Python decodes a file
name or an argument) shows as `\\xff`, so any UTF-8 stream can write the text.

Sizes are written here too, one way: `gib` and `mib`.
"""

from __future__ import annotations

import io
from typing import TextIO

from fontaine_tui.core.errors import InputError

MIB = 1 << 20
GIB = 1 << 30


def gib(n: float | None, places: int = 1, unit: bool = True) -> str:
    """A byte count in GiB ("1.5 GiB"; without `unit` "1.5"); "—" when unknown."""
    if n is None:
        return "—"
    return f"{n / GIB:.{places}f}" + (" GiB" if unit else "")


def mib(n: float | None, places: int = 1, unit: bool = True) -> str:
    """A byte count in MiB ("16.0 MiB"); "—" when unknown."""
    if n is None:
        return "—"
    return f"{n / MIB:.{places}f}" + (" MiB" if unit else "")


_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_TABLE: dict[int, str] = {i: f"\\x{i:02x}" for i in (*range(32), 127, *range(0x80, 0xA0)) if i != 9}
_TABLE.update({i: f"\\u{i:04x}" for i in _BIDI})
_TABLE.update({10: "\\n", 13: "\\r"})  # as written in a string: `\n` reads as one
# the Unicode line and paragraph separators end a line for many readers (splitlines, editors)
_TABLE.update({0x2028: "\\u2028", 0x2029: "\\u2029"})
# a lone surrogate: a byte that was not UTF-8 in a path or an argument (Python decodes those
# with surrogateescape) shows as the byte it was; another as its code point. Neither can be
# encoded, so a strict UTF-8 stdout would raise on it.
_TABLE.update({i: f"\\u{i:04x}" for i in range(0xD800, 0xE000)})
_TABLE.update({i: f"\\x{i - 0xDC00:02x}" for i in range(0xDC80, 0xDD00)})
_BLOCK = {k: v for k, v in _TABLE.items() if k != 10}


def literal(text: str) -> str:
    """A one-line field of outside text, made safe to show on one line.

    The field is a folder name, a registry field, a tag or a note. A newline in it shows as
    `\\n`, so it can never start a line of its own (a forged `VERDICT:` line) in plain output.
    """
    return text.translate(_TABLE).expandtabs(4)


def literal_block(text: str) -> str:
    """Foreign text of several lines: newlines stay, everything else as `literal`."""
    return text.translate(_BLOCK)


def require_utf8(text: str, what: str) -> str:
    """`text` if it can be kept as UTF-8 (a JSON or TOML file), else an InputError.

    The error names `what` and shows the byte that is not UTF-8 (a lone surrogate, as Python
    decodes a file name or an argument).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"{what}: expected UTF-8 text, got '{literal(text)}' (character "
            f"{exc.start + 1} is not UTF-8)"
        ) from None
    return text


def unsafe(text: str) -> list[str]:
    """The characters `literal_block` would escape, as found in `text` (for tests)."""
    return [c for c in text if ord(c) in _BLOCK]


class LiteralStream(io.TextIOBase):
    """A text stream that writes through `literal_block`.

    The command line's stdout and stderr are such streams, so plain reports and error lines
    never carry a control sequence.
    """

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, s: str) -> int:
        self.inner.write(literal_block(s))
        return len(s)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", "utf-8")
