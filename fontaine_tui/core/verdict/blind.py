"""Blinded monitoring: the rule's read hidden until the final one.

A preset that states `[verdict] blind = true` (frozen into prereg.json, so it binds every viewer
and every notification of the run), or a viewer's `--blind`, hides the rule's metric values, its
deltas and the verdict's label on every screen, plain line and notification while the read is
PROVISIONAL, and while the evidence gate withholds it (a run ended before its endpoint, a
broken amendment ledger: core/run/evidence.py's `verdict_of`). Health stays visible: losses,
warnings (NaN, stall, starvation, RAM, the GPU-hours gate), the log's counts, the amendment
ledger. The final read (at the endpoint, or locked and
stopped on the stop_on_lock gate) is shown as always.

Unblinding before the endpoint is deliberate: it takes a reason, and in a run folder it is a
review.jsonl line naming who and why (core/verdict/review.py, action "unblind"), so every later
verdict shows that someone saw the read early and when.
"""

from __future__ import annotations

import getpass
import os
from datetime import datetime

from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.verdict.record import AmendmentCheck, ReviewState, Verdict

BLINDED = "BLINDED"
EXIT_BLINDED = 7  # `verdict` on a blinded PROVISIONAL read: not a class, not a failure
HIDDEN = "hidden (blinded)"


def hidden(preset: Preset, v: Verdict, asked: bool = False) -> bool:
    """Whether the read `v` is hidden: the preset is blind (or the viewer `asked`), `v` not final.

    A read is not final while PROVISIONAL, nor while the evidence gate withholds it
    (`Verdict.withheld`): the run ended before its endpoint without a locked decision, or the
    amendment ledger, which may move the endpoint, does not hold. A broken ledger never makes
    a read final earlier than the endpoint it recorded."""
    return (preset.verdict.blind or asked) and (v.provisional or bool(v.withheld))


def looked_at(v: Verdict) -> bool:
    """Whether the review trail records a look at `v`'s read (its step or a later one).

    Only a trail that holds counts. A look at an earlier probe does not cover a later read,
    as in the console, where a later probe is hidden again."""
    state = v.review
    if state is None or not state.intact:
        return False
    return v.read_step is None or any(
        u.read_step is not None and u.read_step >= v.read_step for u in state.unblinded
    )


REASON_MAX = 500
REASON_RULE = (
    f"expected why, in words (a reason with a letter or digit, at most {REASON_MAX} characters; "
    "it is recorded)"
)


def reason_ok(why: str) -> bool:
    """Whether `why` says something: a letter or digit, and at most REASON_MAX characters."""
    return any(c.isalnum() for c in why) and len(why) <= REASON_MAX


def who() -> str:
    """The person unblinding, as review.jsonl records it: FONTAINE_USER, else the login name."""
    name = "".join(c for c in os.environ.get("FONTAINE_USER", "") if c.isprintable()).strip()
    if not name:
        try:
            name = getpass.getuser()
        except (KeyError, OSError):
            name = ""
    return name or "unknown"


def blinded_headline(v: Verdict) -> str:
    """The one line that stands for a hidden read (plain lines, notifications)."""
    at = f"step {v.read_step}" if v.read_step is not None else "no probe yet"
    if v.withheld:  # not PROVISIONAL only, or the endpoint `v` names is not known
        return f"{BLINDED} ({v.withheld})"
    return (
        f"{BLINDED} (PROVISIONAL, {at} of {v.endpoint_step}: the read is hidden until the endpoint)"
    )


def probe_line(step: int) -> str:
    """A probe record's plain line while blind: its step only."""
    return f"probe step {step}: values {HIDDEN}"


def unblind_hint(target: str) -> str:
    """How to see the read before the endpoint, recorded."""
    return f"to see it before the endpoint: fontaine-tui verdict {target} --unblind WHY (recorded)"


def review_lines(state: ReviewState) -> list[str]:
    """Each unblinding before the endpoint, as the card shows it."""
    return [
        f"unblinded before the endpoint: review line {u.line}, {u.time}, by {u.who} "
        f"at step {u.read_step if u.read_step is not None else '—'}: {u.why}"
        for u in state.unblinded
    ]


def _when(text: str) -> datetime | None:
    try:  # before Python 3.11, fromisoformat takes no "Z"
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def peeked_before(a: AmendmentCheck, state: ReviewState | None) -> str:
    """The words that say `a` was declared after someone saw the blinded read ("" if not)."""
    declared = _when(a.declared_at)
    if state is None or declared is None:
        return ""
    for u in state.unblinded:
        seen = _when(u.time)
        if seen is not None and seen <= declared:
            return (
                f" (declared after {u.who} unblinded the read at step {u.read_step}, "
                f"review line {u.line})"
            )
    return ""
