"""What the engine is doing before its first record, said on stdout: `engine: status: WHAT`.

A first run builds its corpus, decodes its frames and builds its model before
train_log.jsonl holds a record: tens of seconds on two busy CPU cores. Each stage is one
line on stdout, which the launcher appends to the run folder's engine.out.log; the console's
waiting panel and `launch --plain` show the latest until the first record comes (read by
fontaine_tui/core/run/logtail.py, which knows the prefix). A count says its start, each
tenth and its end, so a long stage is a dozen lines, not one per item.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

PREFIX = "engine: status: "
Say = Callable[[str], None]


def say(text: str) -> None:
    """One status line on stdout, flushed at once (a pipe or a file holds it otherwise)."""
    sys.stdout.write(f"{PREFIX}{text}\n")
    sys.stdout.flush()


def counter(say: Say | None, what: str, total: int, unit: str) -> Callable[[int], None]:
    """`done -> None`: says "WHAT: DONE of TOTAL UNIT" at 0, at each tenth and at the end."""
    marks = {0, total} | {total * k // 10 for k in range(1, 10)}

    def count(done: int) -> None:
        if say is not None and done in marks:
            say(f"{what}: {done} of {total} {unit}")

    return count
