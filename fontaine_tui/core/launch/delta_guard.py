"""The single-delta guard: a preset's recipe and platform held to its banked comparator's.

With `[verdict] delta_keys`, a fresh launch whose key differs from the comparator's outside them
is refused, unless the key is declared at launch (`--declare-delta KEY`)."""

from __future__ import annotations

from fontaine_tui.core.launch.findings import Finding
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.text import literal


def check_delta(
    preset: Preset, declared: tuple[str, ...] = (), resume: bool = False
) -> list[Finding]:
    """Hold the preset's recipe and platform to its banked comparator's, key by key.

    Only with `[verdict] delta_keys`, at a fresh launch: a key (preset/delta.py) differing outside
    them refuses, unless declared (`--declare-delta KEY`; the launch puts it in the ledger)."""
    from fontaine_tui.core.errors import InputError
    from fontaine_tui.core.preset.delta import against

    keys = preset.verdict.delta_keys
    if keys is None or resume:
        why = "--resume keeps the launch's deltas" if resume else "no verdict.delta_keys"
        return [Finding("delta", "refuse", f"--declare-delta: {why}")] if declared else []
    try:
        ref, found = against(preset)
    except InputError as exc:
        return [Finding("delta", "refuse", str(exc))]
    out = [
        Finding("delta", "refuse", f"--declare-delta {literal(k)}: not a differing key ({ref})")
        for k in declared
        if k in keys or k not in {key for key, _, _ in found}
    ]
    for key, ours, them in found:
        said = f"{key}: ours {ours}, theirs {them}"
        if key in keys:
            out.append(Finding("delta", "ok", f"delta {said} (verdict.delta_keys)"))
        elif key in declared:
            why = "declared at launch (--declare-delta), recorded in amendments.jsonl"
            out.append(Finding("delta", "warn", f"delta {said}: {why}", (key, ours, them)))
        else:
            out.append(Finding("delta", "refuse", said, (key, ours, them)))
    return out or [Finding("delta", "ok", f"recipe and platform match the banked {ref}")]
