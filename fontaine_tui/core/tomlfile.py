"""TOML from the user's files (presets, config.toml, the registry), read one way.

`tomllib` recurses once per nested array or inline table, so a file nested some thousands of
levels deep ends in a RecursionError, and a dotted key of many thousand parts takes time
and memory that grow with the square of its length. `loads` measures the nesting first, in
one pass over the text, and refuses a file nested deeper than `MAX_DEPTH` with
`TooDeep`, a `TOMLDecodeError`: each reader's own "expected valid TOML" line names the file.
"""

from __future__ import annotations

import re
import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MAX_DEPTH = 100  # tables, arrays and dotted-key parts inside each other

TOMLDecodeError = tomllib.TOMLDecodeError

# what is neither a bracket nor a key: strings (multi-line first) and comments
_OPAQUE = re.compile(
    r'"""(?:\\[\s\S]|[^\\])*?"""|\'\'\'[\s\S]*?\'\'\''
    r'|"(?:\\.|[^"\\\n])*"|\'[^\'\n]*\'|#[^\n]*'
)
_BRACKET = re.compile(r"[\[\]{}]")
_DOTTED = re.compile(r"(?<![\w-])(?:[\w-]+[ \t]*\.[ \t]*){" + str(MAX_DEPTH) + "}")


class TooDeep(tomllib.TOMLDecodeError):
    """The text nests tables, arrays or key parts deeper than `MAX_DEPTH`."""


def depth(text: str) -> int:
    """How deep the text's brackets and braces nest, strings and comments left out.

    `MAX_DEPTH + 1` when a dotted key has more parts than that.
    """
    plain = _OPAQUE.sub("s", text)
    if _DOTTED.search(plain):
        return MAX_DEPTH + 1
    level = deepest = 0
    for m in _BRACKET.finditer(plain):
        level += 1 if m.group() in "[{" else -1
        deepest = max(deepest, level)
    return deepest


def loads(text: str) -> dict[str, Any]:
    """`tomllib.loads`, refusing (TooDeep) a text nested deeper than `MAX_DEPTH`."""
    if depth(text) > MAX_DEPTH:
        raise TooDeep(
            f"nested more than {MAX_DEPTH} levels deep (arrays, tables or "
            "dotted keys inside each other): not read"
        )
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise TooDeep("nested too deep to read (arrays or tables inside each other)") from None
