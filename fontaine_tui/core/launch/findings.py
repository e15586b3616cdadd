"""A launch guard's answer (Finding), and what a launch says of the refused ones.

Each guard (core/launch/guards.py runs them) answers with findings at one of LEVELS; any
"refuse" finding stops the launch, and `refusal` says why in one line."""

from __future__ import annotations

from dataclasses import dataclass

LEVELS = ("ok", "info", "warn", "refuse")


@dataclass(frozen=True, slots=True)
class Finding:
    """One guard's answer: which check, at which level, in words."""

    # "gpu" | "ram" | "folder" | "bounds" | "init" | "engine" | "command" | "code" | "delta"
    check: str
    level: str  # one of LEVELS
    message: str
    # a "delta" finding's (key, ours, theirs): refused, or declared at launch (--declare-delta)
    delta: tuple[str, ...] = ()


def refusal(findings: list[Finding]) -> str | None:
    """One line naming every refusal (keys differing from the comparator together), or None."""
    refused = [f.message for f in findings if f.level == "refuse" and not f.delta]
    keys = [f.delta[0] for f in findings if f.level == "refuse" and f.delta]
    if keys:
        refused.append(
            f"{', '.join(keys)} differ(s) from the banked comparator outside "
            "verdict.delta_keys (each above); --declare-delta KEY launches with it as a "
            "declared delta"
        )
    return "refusing to launch: " + "; ".join(refused) if refused else None


def declared(findings: list[Finding]) -> list[tuple[str, ...]]:
    """The keys declared at launch (--declare-delta) that differ: key, ours, theirs."""
    return [f.delta for f in findings if f.delta and f.level == "warn"]


def delta_lines(findings: list[Finding]) -> list[str]:
    """One line per key refused for differing from the comparator: key, ours, theirs."""
    return [f"  {f.message}" for f in findings if f.level == "refuse" and f.delta]
