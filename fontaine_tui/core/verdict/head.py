"""The recorded head of an append-only hash chain (amendments.jsonl, review.jsonl).

A hash chain finds an edited, inserted or reordered line, but not a cut at its end: without
its last line (or the whole file) it still holds. So each append also records, in a file
beside the chain (`amendments.jsonl.head`), how many lines the chain had and the sha256 of
its last one; it is replaced atomically under the chain's lock, after the line is written.
A reader checks that the chain it walked reaches that head: fewer lines, or another line at
that place, is named. More lines than the head are accepted (a writer stopped between the
line and the head, or a version that kept no head appended).

Each line written with a head carries `"head": "<the head file's name>"`, so a head file
removed together with the last lines is named too; a chain none of whose lines says so (a
run from before heads were kept) reads as it always did.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from fontaine_tui.core.atomic import atomic_write
from fontaine_tui.core.limits import json_loads

SCHEMA = "fontaine-tui/chain-head/1"
MARK = "head"  # the key a line written with a head carries


def head_name(chain_name: str) -> str:
    return chain_name + ".head"


def head_path(chain: str | Path) -> Path:
    chain = Path(chain)
    return chain.with_name(head_name(chain.name))


def record(chain: str | Path, lines: int, last: str) -> None:
    """Record that `chain` now holds `lines` lines, the last with sha256 `last`.

    Call it under the chain's lock, after the line is written."""
    doc = {"schema": SCHEMA, "lines": lines, "last": last}
    atomic_write(head_path(chain), json.dumps(doc, sort_keys=True) + "\n")


def read(chain: str | Path) -> bytes | None:
    """The head file's bytes beside a local chain; None when there is none."""
    from fontaine_tui.core.errors import InputError
    from fontaine_tui.core.readfile import read_whole

    path = head_path(chain)
    try:
        return read_whole(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def check(origin: str, head: bytes | None, links: Sequence[str], marked: bool) -> str:
    """Why the chain as walked is not the one recorded, in words ("" when it is).

    `origin` names the chain, `links[0]` is its genesis and `links[k]` the sha256 of its line k.
    `marked` says one of its lines states that a head is kept."""
    where = head_name(origin)
    if head is None:
        if marked:
            return (
                f"{origin}: its lines say {Path(where).name} is kept, but it is missing "
                "(removed, with the chain's last lines perhaps)"
            )
        return ""
    recorded = parse(head)
    if recorded is None:
        return f'{where}: expected {{"lines": N, "last": sha256}} (edited)'
    return reaches(origin, where, recorded, links)


def parse(head: bytes) -> tuple[int, str] | None:
    """A head file's (lines, last) when its bytes hold them, else None."""
    try:
        doc = json_loads(head)
        n, last = doc["lines"], doc["last"]
    except (ValueError, KeyError, TypeError):
        return None
    return (n, last) if counted(n) and isinstance(last, str) else None


def counted(n: object) -> bool:
    """A line count: an int, not a bool, not negative."""
    return isinstance(n, int) and not isinstance(n, bool) and n >= 0


def reaches(origin: str, where: str, recorded: tuple[int, str], links: Sequence[str]) -> str:
    """Why the chain as walked does not reach the head `where` recorded ("" when it does).

    `recorded` is (lines, sha256 of the last line, or the genesis for none)."""
    n, last = recorded
    have = len(links) - 1
    if have < n:
        return (
            f"{origin}: holds {have} line(s) but {n} were recorded in {where} (its last "
            "line(s) removed, or the file cut short)"
        )
    if links[n] != last:
        return f"{origin}: line {n} is not the one recorded in {where} (the chain was rewritten)"
    return ""
