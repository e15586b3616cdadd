"""The rule's bounds held to the seed-noise floor before a launch (`doctor`).

At pre-registration the floor is read at the endpoint in force, and each bound of the rule that
lies inside it is said: that rule cannot tell its class from seed noise."""

from __future__ import annotations

import math

from fontaine_tui.core.preset.record import Amendment, Preset
from fontaine_tui.core.verdict.amendments import (
    applied_scales,
    check_amendments,
    endpoint_in_force,
)
from fontaine_tui.core.verdict.seednoise import seed_noise


def preregistration_checks(preset: Preset) -> list[tuple[str, str]]:
    """The rule's bounds held to the seed-noise floor before a launch: (level, line) each.

    The floor is read at the endpoint in force. A bound inside it is a "warn": the rule cannot
    tell its class from seed noise. A scale-adjusted rule is checked where its factor is fixed;
    a factor computed from this run's own level is known only once the run reaches its step,
    and the card holds those bounds to the floor then. [] without a seed group."""
    checks = check_amendments(preset.amendments, preset)
    endpoint = endpoint_in_force(preset, preset.amendments, checks)
    scales = applied_scales(preset.amendments, checks)
    factor = _fixed_factor(scales)
    noise = seed_noise(preset, endpoint, None, factor)
    if noise is None:
        return []
    if why := noise.why_none():
        return [("warn", f"verdict.seed_group: {why}: the bounds are not held to seed noise")]
    out = [("info", f"seed noise of {noise.group}: {noise.floor()}; {noise.detail()}")]
    out += [("warn", line) for line in noise.bounds_inside]
    if scales and factor is None:
        out.append(
            (
                "info",
                f"the scale-adjusted bounds (amendment {scales[0].id}) take their factor from "
                f"this run at step {scales[0].from_step}: the card holds them to the seed noise",
            )
        )
    if not noise.bounds_inside:
        out.append(("ok", f"the rule's bounds lie outside the seed noise of {noise.group}"))
    return out


def _fixed_factor(scales: list[Amendment]) -> float | None:
    """The factor of the scale amendment in force where it is fixed (None: none, or computed)."""
    return scales[0].factor if scales and math.isfinite(scales[0].factor) else None
