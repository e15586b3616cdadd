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
        if not declared:
            return []
        why = "--resume keeps the launch's deltas" if resume else "no verdict.delta_keys"
        return [Finding("delta", "refuse", f"--declare-delta: {why}")]
    try:
        ref, found = against(preset)
    except InputError as exc:
        return [Finding("delta", "refuse", str(exc))]
    out = _declared_in_vain(declared, keys, {key for key, _, _ in found}, ref)
    out += [_differing(key, ours, them, keys, declared) for key, ours, them in found]
    return out or [Finding("delta", "ok", f"recipe and platform match the banked {ref}")]


def _declared_in_vain(
    declared: tuple[str, ...], keys: tuple[str, ...], differing: set[str], ref: str
) -> list[Finding]:
    """A refusal for each --declare-delta KEY already allowed (delta_keys) or not differing."""
    return [
        Finding("delta", "refuse", f"--declare-delta {literal(k)}: not a differing key ({ref})")
        for k in declared
        if k in keys or k not in differing
    ]


def _differing(
    key: str, ours: str, them: str, keys: tuple[str, ...], declared: tuple[str, ...]
) -> Finding:
    """One key differing from the comparator's: allowed in delta_keys, declared, else refused."""
    said = f"{key}: ours {ours}, theirs {them}"
    if key in keys:
        return Finding("delta", "ok", f"delta {said} (verdict.delta_keys)")
    if key in declared:
        why = "declared at launch (--declare-delta), recorded in amendments.jsonl"
        return Finding("delta", "warn", f"delta {said}: {why}", (key, ours, them))
    return Finding("delta", "refuse", said, (key, ours, them))
