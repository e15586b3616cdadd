"""Secrets out of a command line before it is shown: the processes mode's cells and stacks.

One rule for every place a command line reaches the screen (the command cell, each line of
py-spy's dump, whose first line is the whole command line): the value of a secret-named flag
or variable (`--hf_token X`, `--wandb-key=X`, `--credentials X`, `-p X`, `WANDB_API_KEY=X`)
shows as ***, and a URL that carries a credential (user info, a query, a webhook's path) shows
as core/notify/redact.py masks a webhook URL.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fontaine_tui.core.notify.redact import MASK, redact_url

# a flag's or variable's name (dashes stripped) that says its value is a secret
_SECRET_NAME = re.compile(
    r"token|secret|passw|pwd|api[-_]?key|(^|[-_])keys?($|[-_])|auth|credential|hook|private",
    re.IGNORECASE,
)
_SHORT_SECRET = ("-p",)  # mysql -p, sshpass -p: the password follows
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"]+")


def _secret_flag(word: str) -> bool:
    return word in _SHORT_SECRET or (
        word.startswith("-") and bool(_SECRET_NAME.search(word.lstrip("-")))
    )


def _carries_token(url: str) -> bool:
    """Whether a URL holds a credential: user info, a query or fragment, a webhook's path."""
    rest = url.partition("://")[2]
    where = rest.split("/", 1)[0]
    return "@" in where or "?" in rest or "#" in rest or "hook" in url.lower()


def _urls_masked(word: str) -> str:
    return _URL.sub(lambda m: redact_url(m[0]) if _carries_token(m[0]) else m[0], word)


def mask_words(words: Sequence[str]) -> list[str]:
    """`words` (an argv, or a line split on spaces) with every secret in them as ***.

    A secret-named `--flag=value` or `NAME=value` keeps its name; after a secret-named
    `--flag` (or `-p`) the next word is hidden whole; a URL carrying a credential is masked
    where it stands. Empty words (runs of spaces in a split line) are kept as they are."""
    out: list[str] = []
    hide_next = False
    for word in words:
        if not word:
            out.append(word)
            continue
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        name, eq, value = word.partition("=")
        if (
            eq
            and name
            and not name.startswith("-")
            and " " not in name
            and _SECRET_NAME.search(name)
        ):
            out.append(f"{name}={MASK}")  # WANDB_API_KEY=...
        elif eq and _secret_flag(name):
            out.append(f"{name}={MASK}")  # --wandb-key=...
        elif not eq and _secret_flag(word):
            out.append(word)
            hide_next = True
        else:
            out.append(_urls_masked(word))
    return out
