"""Whether each amendment counts, and the endpoint in force after the applied extends."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from fontaine_tui.core.preset.record import Amendment, Preset
from fontaine_tui.core.verdict.record import AmendmentCheck


def check_amendments(amendments: Iterable[Amendment], preset: Preset) -> list[AmendmentCheck]:
    """Check which amendments count, by the steps they were declared at and first affect.

    An amendment counts only if the last step seen at declaration precedes the first step it
    affects. A scale amendment first affects the anchor probe (the first delta; in a level read,
    the first probe) and only one is in force. An extend first affects the endpoint in force when
    it is declared (that read would have been final) and moves it later; several extends apply in
    turn."""
    spec = preset.verdict
    scale_first = spec.anchor_step if spec.read == "delta" else int(preset.recipe["eval_every"])
    what = "the anchor probe" if spec.read == "delta" else "the first probe"
    endpoint = spec.endpoint_step
    checks = []
    scale_in_force = False
    for a in amendments:
        if a.kind == "delta":  # a declared delta changes no read: it is shown, never refused
            key, ours, theirs = a.delta
            why = f"{key}: ours {ours}, theirs {theirs} ({a.comparator}), declared at launch"
            checks.append(
                AmendmentCheck(a.id, a.kind, a.source, a.declared_at, 0, 0, "declared", why)
            )
            continue
        if a.kind == "extend":
            first, kind, where = endpoint, "an extend", "the endpoint in force"
        else:
            first, kind, where = scale_first, "a scale amendment", what
        reason = ""
        if a.declared_after_step >= first:
            reason = (
                f"declared after step {a.declared_after_step} was seen; {kind} "
                f"must be declared before step {first} ({where})"
            )
        elif a.declared_before_step > first:
            reason = (
                f"declared before step {a.declared_before_step}, but it affects step "
                f"{first} ({where})"
            )
        elif a.kind == "extend" and a.to_step <= endpoint:
            reason = f"moves the endpoint to {a.to_step}, not past {endpoint} (in force)"
        elif a.kind == "scale" and scale_in_force:
            reason = "a scale amendment is already in force"
        status = "refused" if reason else "applied"
        if not reason:
            reason = f"declared after step {a.declared_after_step} was seen, before step {first}"
            if a.kind == "extend":
                reason += f": the endpoint moves from {endpoint} to {a.to_step}"
                endpoint = a.to_step
            else:
                scale_in_force = True
        checks.append(
            AmendmentCheck(
                a.id, a.kind, a.source, a.declared_at, a.declared_after_step, first, status, reason
            )
        )
    return checks


def endpoint_in_force(
    preset: Preset, amendments: Iterable[Amendment], checks: Iterable[AmendmentCheck]
) -> int:
    """The endpoint after the applied extends (the preset's own when none)."""
    endpoint = preset.verdict.endpoint_step
    for a, c in zip(amendments, checks, strict=True):
        if a.kind == "extend" and c.status == "applied":
            endpoint = a.to_step
    return endpoint


def declared_deltas(amendments: Iterable[Amendment]) -> tuple[Mapping[str, object], ...]:
    """The deltas declared at launch, for verdict.json: key, ours, theirs and their record."""
    return tuple(
        {
            "amendment": a.id,
            "key": a.delta[0],
            "ours": _value(a.delta[1]),
            "theirs": _value(a.delta[2]),
            "comparator": a.comparator,
            "declared_at": a.declared_at,
        }
        for a in amendments
        if a.kind == "delta"
    )


def _value(text: str) -> object:
    """A value kept as JSON text, as its value (the text itself when it is not JSON)."""
    try:
        return json.loads(text)
    except ValueError:
        return text
