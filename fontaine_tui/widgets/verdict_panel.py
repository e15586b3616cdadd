"""The verdict: the combined label, both rules side by side, the interpretation, the ledger."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Static

from fontaine_tui.core.preset.checks import (
    AMBIGUOUS,
    BY_INSTRUMENT,
    HEALTHY,
    SAME_DRIFT,
    UNDECIDABLE,
)
from fontaine_tui.core.verdict import blind
from fontaine_tui.core.verdict.lock import Lock
from fontaine_tui.core.verdict.record import AmendmentCheck, ReviewState, RuleRead, Verdict
from fontaine_tui.core.verdict.text import (
    bound_words,
    comparator_lines,
    corroboration_line,
    platform_delta_lines,
    review_line,
    secondary_lines,
    seed_noise_lines,
    signed,
)
from fontaine_tui.model.ledger import Ledger
from fontaine_tui.widgets.safe import Part, assemble

LABEL_STYLE = {
    HEALTHY: "bold $success",
    SAME_DRIFT: "bold $error",
    AMBIGUOUS: "bold $warning",
    BY_INSTRUMENT: "bold $warning",
    UNDECIDABLE: "bold $text-muted",
}
LABEL_CLASS = {
    HEALTHY: "-healthy",
    SAME_DRIFT: "-drift",
    AMBIGUOUS: "-ambiguous",
    BY_INSTRUMENT: "-ambiguous",
    UNDECIDABLE: "-undecidable",
}


def styled_label(cls: str, v: Verdict | None = None) -> tuple[str, str]:
    """A verdict class in the preset's words, styled by the class."""
    return (v.label_of(cls) if v is not None else cls), LABEL_STYLE.get(cls, "bold")


class VerdictBanner(Static):
    """The combined verdict, coloured by class, PROVISIONAL / UNDECIDABLE marked."""

    DEFAULT_CSS = """
    VerdictBanner { height: 3; content-align: center middle; text-style: bold;
                    border: heavy $panel; }
    VerdictBanner.-healthy { border: heavy $success; color: $success; }
    VerdictBanner.-drift { border: heavy $error; color: $error; }
    VerdictBanner.-ambiguous { border: heavy $warning; color: $warning; }
    VerdictBanner.-undecidable { border: heavy $secondary; color: $text-muted; }
    """

    def show(self, v: Verdict, live: bool) -> None:
        for cls in set(LABEL_CLASS.values()):
            self.remove_class(cls)
        self.add_class(LABEL_CLASS.get(v.verdict, "-undecidable"))
        status = "PROVISIONAL" if v.provisional else "FINAL"
        at = f"step {v.read_step}" if v.read_step is not None else "no probe yet"
        self.border_title = "verdict (latest read)" if live else "verdict (stepping through reads)"
        self.update(
            assemble(
                f"{v.label}",
                "  ",
                (f"[{status}]", "reverse" if v.provisional else ""),
                f"  read at {at} of {v.endpoint_step}  {v.read} {signed(v.delta)}",
                *(
                    (("  REVIEW TRAIL BROKEN", "bold $error"),)
                    if v.review is not None and not v.review.intact
                    else ()
                ),
            )
        )

    def show_blinded(self, v: Verdict) -> None:
        """The banner of a hidden read: no class colour, no label, no delta."""
        for cls in set(LABEL_CLASS.values()):
            self.remove_class(cls)
        self.add_class("-undecidable")
        self.border_title = "verdict (blinded)"
        at = f"step {v.read_step}" if v.read_step is not None else "no probe yet"
        self.update(
            assemble(
                "BLINDED",
                "  ",
                ("[PROVISIONAL]", "reverse"),
                f"  latest probe at {at} of {v.endpoint_step}: hidden until the endpoint",
                *(
                    (("  REVIEW TRAIL BROKEN", "bold $error"),)
                    if v.review is not None and not v.review.intact
                    else ()
                ),
            )
        )


def _rule_column(title: str, rule: RuleRead | None, absent: str, v: Verdict) -> Content:
    if rule is None:
        return assemble((title, "bold underline"), "\n", (absent, "$text-muted"))
    healthy, drift = bound_words(rule.direction)
    return assemble(
        (title, "bold underline"),
        "\n",
        f"healthy if {rule.read} {healthy} {signed(rule.healthy)}\n",
        f"drift   if {rule.read} {drift} {signed(rule.drift)}\n",
        f"{rule.read:<17}{signed(rule.value)}\n",
        "reads            ",
        styled_label(rule.label, v),
    )


class RulesPanel(Horizontal):
    """Raw rule | scale-adjusted rule, side by side."""

    DEFAULT_CSS = """
    RulesPanel { height: auto; }
    RulesPanel > Static { width: 1fr; height: auto; border: round $panel; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="raw")
        yield Static(id="scaled")

    def show(self, v: Verdict) -> None:
        self.query_one("#raw", Static).update(_rule_column("raw rule", v.raw, v.reason, v))
        title = (
            f"scale-adjusted rule (x{v.scale.value:.3f})"
            if v.scale is not None
            else "scale-adjusted rule"
        )
        absent = "no scale amendment in force" if v.raw is not None else v.reason
        self.query_one("#scaled", Static).update(_rule_column(title, v.scaled, absent, v))


class LedgerPanel(Vertical):
    """Preset hash against prereg.json, launch time, amendments and whether each counts."""

    DEFAULT_CSS = """
    LedgerPanel { height: auto; border: round $panel; padding: 0 1;
                  border-title-color: $text-muted; }
    LedgerPanel > Static { height: auto; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="ledger")

    def on_mount(self) -> None:
        self.border_title = "ledger"

    def show(
        self, v: Verdict, ledger: Ledger, decision: Lock | None = None, blinded: bool = False
    ) -> None:
        """Show the ledger of verdict `v`, with the decision lock when one holds.

        `decision` is the latest read's decision lock: it is about the run, not the read
        being stepped through. A `blinded` read shows the ledger and the review trail only
        (core/verdict/blind.py).
        """
        if blinded:
            self._show_blinded(v, ledger)
            return
        decision = decision if decision is not None else v.decision
        parts = [*_ledger_parts(v, ledger, False), *_scale_lines(v), corroboration_line(v)]
        for line in _read_lines(v, decision):
            parts += ["\n", line]
        self.query_one("#ledger", Static).update(assemble(*parts))

    def _show_blinded(self, v: Verdict, ledger: Ledger) -> None:
        parts = _ledger_parts(v, ledger, True)
        for change in v.provenance_changes:
            parts += [(f"WARNING: {change}", "$error"), "\n"]
        self.query_one("#ledger", Static).update(assemble(*parts))


# the preset's hash against prereg.json: matched, did not, or not checked
HASH_STYLES = {True: "$success", False: "$error", None: "$text-muted"}
AMENDMENT_STYLES = {"applied": "$success", "declared": "$warning"}  # any other: "$error"


def _ledger_parts(v: Verdict, ledger: Ledger, blinded: bool) -> list[Part]:
    """The preset hash, launch time, amendments, ledger break and review trail."""
    parts: list[Part] = [
        f"preset sha256 {v.preset.get('sha256', '')[:16]}  ",
        (ledger.hash_status, HASH_STYLES[ledger.hash_ok]),
        "\n",
        f"launched {ledger.launched_at or '—'}\n",
    ]
    for a in v.amendments:
        parts += _amendment_parts(a, v.review, blinded)
    if not v.amendments:
        parts.append(("no amendments\n", "$text-muted"))
    if ledger.error:  # a break in the amendment chain, or a ledger that cannot be read
        parts += [(f"LEDGER: {ledger.error}", "$error"), "\n"]
    if v.review is not None:
        parts += _review_parts(v.review)
    return parts


def _amendment_parts(a: AmendmentCheck, review: ReviewState | None, blinded: bool) -> list[Part]:
    """An amendment's line: what, whence, its status, and why unless the read is blinded."""
    return [
        f"amendment {a.id} ({a.kind}, {a.source}",
        f", declared {a.declared_at}" if a.declared_at else "",
        "): ",
        (a.status, AMENDMENT_STYLES.get(a.status, "$error")),
        "" if blinded else f" — {a.reason}",  # a scale's reason quotes the run's levels
        (blind.peeked_before(a, review), "$warning"),
        "\n",
    ]


def _review_parts(review: ReviewState) -> list[Part]:
    """The review trail's line (an error where it does not hold), then its looks."""
    line = review_line(review)
    return [
        (line, "$text-muted" if review.intact else "$error"),
        "\n",
        *((u + "\n", "$warning") for u in blind.review_lines(review)),
    ]


def _scale_lines(v: Verdict) -> list[Part]:
    """Where the scale in force came from, and its evidence, when there is one."""
    if v.scale is None:
        return []
    evidence = [f"scale evidence: {v.scale.evidence}\n"] if v.scale.evidence else []
    return [f"scale: {v.scale.provenance}\n", *evidence]


def _read_lines(v: Verdict, decision: Lock | None) -> list[Part]:
    """The lines under the corroboration, each styled by what it warns of.

    The secondary rules, the decision lock, the comparators, the seed noise, the recovery,
    the provenance changes and the platform's deltas."""
    return [
        *secondary_lines(v),
        *([decision.describe()] if decision is not None else []),
        *((line, "$text-muted") for line in comparator_lines(v)),
        *((line, "$warning" if "WARNING" in line else "") for line in seed_noise_lines(v)),
        *([v.recovery.words()] if v.recovery is not None else []),
        *((f"WARNING: {change}", "$error") for change in v.provenance_changes),
        *((line, "$text-muted") for line in platform_delta_lines(v)),
    ]
