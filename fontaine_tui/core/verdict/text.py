"""A verdict as plain text: both rules side by side, then the combined verdict."""

from __future__ import annotations

import math

from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict import blind
from fontaine_tui.core.verdict.record import ReviewState, RuleRead, Scale, Verdict


def signed(x: float | None, places: int = 4) -> str:
    if x is None:
        return "—"
    if not math.isfinite(x):
        return repr(x)
    return f"{x:+.{places}f}"


def status_word(v: Verdict) -> str:
    return "PROVISIONAL" if v.provisional else "final"


def waiting(v: Verdict) -> str:
    """What a provisional read still waits for before it reads anything, or "".

    A delta read at or before its anchor compares the anchor with itself (a delta of 0 by
    construction, or none): it says nothing yet."""
    if not v.provisional:
        return ""
    if v.read_step is None:
        return "waiting for the first probe"
    if v.read == "delta" and v.read_step <= v.anchor_step:
        past = "the anchor probe" if v.read_step < v.anchor_step else "a probe past the anchor"
        return f"waiting for {past} (step {v.anchor_step})"
    return ""


def interpretation_line(v: Verdict) -> tuple[str, str] | None:
    """(lead, words) of the preset's interpretation as a read may show it; None for none.

    Only a final read is interpreted; a provisional one says what its class would mean if it
    held at the endpoint, and one still waiting (`waiting`) says nothing."""
    if not v.interpretation or waiting(v):
        return None
    if v.provisional:
        return "if this holds at the endpoint: ", v.interpretation
    return "interpretation: ", v.interpretation


def read_words(v: Verdict, size: int = 0) -> str:
    """The read in a few words, for a header: its label and status, or what it waits for.

    `size` 0 is the whole form; 1 and 2 are shorter ones for a narrow terminal, each still
    saying whether the read is PROVISIONAL or final."""
    if wait := waiting(v):
        if size == 0:
            return wait
        if v.read_step is None:
            return "waiting for a probe"
        past = v.read_step >= v.anchor_step  # the anchor's probe is in: one past it is awaited
        return f"waiting {'past' if past else 'for'} step {v.anchor_step}"
    if v.provisional:
        status = (
            f"PROVISIONAL, step {v.read_step} of {v.endpoint_step}",
            "PROVISIONAL",
            "prov.",
        )[min(size, 2)]
    else:
        status = "final" if size else f"final, step {v.read_step}"
    return literal(f"{v.label} ({status})")


def headline(v: Verdict) -> str:
    """One line: the combined verdict with its status, step and delta."""
    at = f"step {v.read_step}" if v.read_step is not None else "no probe"
    return literal(
        f"{v.label} ({status_word(v)}, {at} of {v.endpoint_step}, {v.read} {signed(v.delta)})"
    )


def bound_words(direction: str) -> tuple[str, str]:
    """The comparisons of (healthy, drift) in a direction: ("<=", ">=") when lower is better."""
    return ("<=", ">=") if direction == "lower" else (">=", "<=")


def _rule_rows(
    v: Verdict, raw: RuleRead | None, scaled: RuleRead | None, scale: float | None
) -> list[str]:
    right_title = f"scale-adjusted (x{scale:.3f})" if scale is not None else "scale-adjusted"
    rows = [f"{'':18}{'raw rule':<24}{right_title}"]

    def cell(rule: RuleRead | None, attr: str) -> str:
        if rule is None:
            return "—"
        value = getattr(rule, attr)
        if attr == "label":
            return v.label_of(value)
        return value if isinstance(value, str) else signed(value)

    healthy, drift = bound_words(v.direction)
    for title, attr in (
        (f"healthy if {healthy}", "healthy"),
        (f"drift if {drift}", "drift"),
        (v.read, "value"),
        ("reads", "label"),
    ):
        rows.append(f"{title:<18}{cell(raw, attr):<24}{cell(scaled, attr)}")
    if scaled is None:
        rows.append(f"{'':18}{'':24}(no scale amendment in force)")
    return rows


def _where(v: Verdict) -> list[str]:
    if v.segments and v.malformed_at:
        return list(v.malformed_at)
    return [f"line {n}" for n in v.malformed_lines]


def _log_lines(v: Verdict, log_label: str, detail: bool = True) -> list[str]:
    """The card's first lines: the preset, what the log held, its notices and provenance.

    Without `detail` (a blinded card) the out-of-order and conflicting records, and the eval
    values that are not numbers, are counted, not quoted: their words may name a probe's values."""
    lines = [f"preset {v.preset.get('name', '?')}  sha256 {v.preset.get('sha256', '')[:12]}"]
    if log_label:
        lines.append(_log_summary(v, log_label))
        lines += _log_records(v, detail)
    lines += [f"WARNING: {c}" for c in v.provenance_changes]
    return lines


# what else the log held, said after its records and malformed lines where there is any
_ALSO_COUNTED = (("resumes", "resume(s)"), ("repeats", "repeated record(s)"))


def _log_summary(v: Verdict, log_label: str) -> str:
    """What the log held in one line: its records, malformed lines (the first ten named)."""
    counts = v.counts
    malformed = counts.get("malformed", 0)
    where = ""
    if malformed:
        where = f" ({', '.join(_where(v)[:10])}{', ...' if malformed > 10 else ''})"
    also = "".join(f", {counts[key]} {what}" for key, what in _ALSO_COUNTED if counts.get(key))
    return (
        f"log {log_label}: {counts.get('records', 0)} records, {malformed} malformed lines"
        f"{where}{also}"
    )


def _log_records(v: Verdict, detail: bool) -> list[str]:
    """The log's segments, records not applied, conflicts and notices (quoted with `detail`)."""
    counts = v.counts
    lines = []
    if v.segments:
        lines.append("read from " + ", then ".join(name for name, _ in v.segments))
    if counts.get("out_of_order"):
        lines.append(_out_of_order_line(v, detail))
    if counts.get("conflicts"):
        shown = ": " + "; ".join(v.conflicts[:3]) if detail else ""
        lines.append(f"{counts['conflicts']} conflicting probe(s){shown}")
    lines += [f"note: {n}" for n in v.notices]
    if v.odd_values.count:  # blinded: counted, as the conflicts (a read at one is UNDECIDABLE)
        lines.append(f"note: {v.odd_values.words(hidden=not detail)}")
    return lines


def _out_of_order_line(v: Verdict, detail: bool) -> str:
    """The records not applied, counted; with `detail`, the first three quoted."""
    n = v.counts["out_of_order"]
    more = ""
    if detail:
        shown = "; ".join(f"{where}: {why}" for where, why in v.out_of_order[:3])
        more = f" ({shown}{'; ...' if n > 3 else ''})"
    return f"{n} record(s) out of order, not applied{more}"


def render_blinded(v: Verdict, log_label: str = "", target: str = "") -> str:
    """The card of a hidden read (core/verdict/blind.py): health, ledger and review, no read."""
    lines = _log_lines(v, log_label, detail=False)
    lines.append(
        f"metric {v.metric}: values, deltas and the verdict {blind.HIDDEN} until the endpoint "
        f"(step {v.endpoint_step})"
    )
    lines.append("")
    lines.append(f"VERDICT: {blind.blinded_headline(v)}")
    if v.review is not None:
        lines += blind.review_lines(v.review)
    for a in v.amendments:  # a scale's reason quotes the run's levels: its status only
        lines.append(f"amendment {a.id} ({a.kind}, {a.source}): {a.status}")
    if v.recovery is not None:
        lines.append(v.recovery.words())
    if target:
        lines.append(blind.unblind_hint(target))
    return "\n".join(map(literal, lines))


def render(v: Verdict, log_label: str = "") -> str:
    lines = _log_lines(v, log_label)
    lines.append(_read_line(v))
    lines.append("")
    lines += _rule_rows(v, v.raw, v.scaled, v.scale.value if v.scale else None)
    lines += secondary_lines(v)
    lines.append("")
    lines.append(f"VERDICT: {v.label}  [{status_word(v)}]  {v.reason}")
    if v.review is not None:
        lines.append(review_line(v.review))
        lines += blind.review_lines(v.review)
    lines += _scale_lines(v.scale)
    lines += [
        f"amendment {a.id} ({a.kind}, {a.source}): {a.status}: {a.reason}"
        + blind.peeked_before(a, v.review)
        for a in v.amendments
    ]
    if v.corroboration:
        lines.append(corroboration_line(v))
    lines += comparator_lines(v)
    lines += seed_noise_lines(v)
    if v.decision is not None:
        lines.append(v.decision.describe())
    if v.recovery is not None:
        lines.append(v.recovery.words())
    if wait := waiting(v):
        lines.append(f"read: {wait}")
    if shown := interpretation_line(v):
        lines.append("".join(shown))
    if caveat := typed_in_caveat(v):
        lines.append(f"caveat: {caveat}")
    lines += platform_delta_lines(v)
    # each is one line: a newline in what it quotes (a folder's name, a preset's text, a
    # note) shows as `\n` and never starts a line of its own
    return "\n".join(map(literal, lines))


def _read_line(v: Verdict) -> str:
    """Where the read is taken and the values it reads: the level, or both ends of the delta."""
    read = "—" if v.read_step is None else str(v.read_step)
    better = "" if v.direction == "lower" else ", higher is better"
    if v.read == "level":
        return (
            f"read at step {read} (endpoint {v.endpoint_step}{better}): "
            f"{v.metric}({read}) = {signed(v.read_value).lstrip('+')}, the level read"
        )
    return (
        f"read at step {read} (anchor {v.anchor_step}, endpoint {v.endpoint_step}{better}): "
        f"{v.metric}({v.anchor_step}) = {signed(v.anchor_value).lstrip('+')}, "
        f"{v.metric}({read}) = {signed(v.read_value).lstrip('+')}, delta = {signed(v.delta)}"
    )


def _scale_lines(scale: Scale | None) -> list[str]:
    """The scale in force: where its factor comes from, and its evidence where there is any."""
    if scale is None:
        return []
    lines = [f"scale: {scale.provenance}"]
    if scale.evidence:
        lines.append(f"scale evidence: {scale.evidence}")
    return lines


def review_line(state: ReviewState) -> str:
    """The review trail beside a verdict, in one line."""
    if state.intact:
        return f"review: {state.lines} line(s), chain intact"
    return f"REVIEW TRAIL BROKEN: {state.broken}"


def typed_in_caveat(v: Verdict) -> str:
    """The caveat that the read compares with numbers measured elsewhere, if none is banked.

    When no comparator of the read is a banked run, its interpretation compares this run with
    numbers measured elsewhere. "" when some comparator was banked."""
    if not v.comparators or any(c.get("bank") for c in v.comparators):
        return ""
    return (
        "every comparator is a number typed into the preset, none a run banked on this "
        "host: this run is read against numbers measured elsewhere (other code, data or "
        "hardware); bank a run here (fontaine-tui bank add) and name it in [comparators] to "
        "compare like with like"
    )


def secondary_lines(v: Verdict) -> list[str]:
    """Each secondary rule's read, one line each, and how the rules combine."""
    if not v.secondary:
        return []
    how = (
        "the primary rule decides; these corroborate"
        if v.combine == "primary"
        else "all rules must agree"
    )
    out = [f"secondary rules ({how}):"]
    for s in v.secondary:
        if s.rule is None:
            out.append(f"  secondary rule {s.name} ({s.metric}): {s.label}: {s.reason}")
            continue
        h, d = bound_words(s.rule.direction)
        out.append(
            f"  secondary rule {s.name} ({s.metric}): {s.rule.read} "
            f"{signed(s.rule.value)}  healthy if {h} {signed(s.rule.healthy)}, drift if "
            f"{d} {signed(s.rule.drift)}: {s.label}"
        )
    return out


def comparator_lines(v: Verdict) -> list[str]:
    """Each comparator with where its numbers come from (typed in, or a banked run)."""
    out = []
    for c in v.comparators:
        delta, ref = c.get("delta"), c.get("bank")
        name, _, sha = ref.partition("@") if isinstance(ref, str) else ("", "", "")
        pinned = f", {name}@{sha[:12]}" if sha else ""
        number = signed(delta if isinstance(delta, float) else None)
        out.append(f"comparator {c.get('name')} {number} ({c.get('where')}{pinned})")
    return out


def seed_noise_lines(v: Verdict) -> list[str]:
    """The seed-noise floor beside the verdict: where the read lies, the seeds, bounds inside it.

    [] when the preset names no seed group. It never changes the verdict's label."""
    noise = v.seed_noise
    if noise is None:
        return []
    out = [f"seed noise: {noise.line()}"]
    if noise.seeds:
        out.append(f"  {noise.detail()}")
    out += [f"  WARNING: {line}" for line in noise.bounds_inside]
    return out


def platform_delta_lines(v: Verdict, most: int = 4) -> list[str]:
    """The launcher script's declared platform delta, as frozen at launch.

    The delta is the lines above its command block that differ from the reference launcher's:
    a count and the first `most` changed lines; [] when the run has none."""
    delta = v.provenance.get("platform_delta")
    if not isinstance(delta, list) or not delta:
        return []
    changed = [str(ln) for ln in delta[2:] if str(ln)[:1] in ("+", "-")]
    shown = [f"  {ln}" for ln in changed[:most]]
    more = (
        [f"  ... {len(changed) - most} more (prereg.json provenance.platform_delta)"]
        if len(changed) > most
        else []
    )
    return [
        f"platform delta (launcher above its command block, vs the reference): "
        f"{len(changed)} line(s)",
        *shown,
        *more,
    ]


def corroboration_line(v: Verdict) -> str:
    """The corroborating evidence (never a gate) as one line; "" when the read has none."""
    corr = v.corroboration
    if not corr:
        return ""
    mono = corr.get("monotone_rise")
    train = corr.get("train_delta")
    number = train if isinstance(train, (int, float)) and not isinstance(train, bool) else None
    rise = f"eval rises monotonically: {'n/a' if mono is None else ('yes' if mono else 'no')}"
    if train is None:  # the run logs no train MAE
        return f"corroboration (not gates): {rise}"
    return f"corroboration (not gates): train-slice delta {signed(number)}; {rise}"
