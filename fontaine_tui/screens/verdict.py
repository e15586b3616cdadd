"""Verdict mode: both rules, the combined verdict, interpretation, ledger, review keys."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from fontaine_tui.core.verdict.record import Verdict
from fontaine_tui.core.verdict.text import interpretation_line, typed_in_caveat, waiting
from fontaine_tui.model.view import RunView, blind_note
from fontaine_tui.screens.base import ViewScreen
from fontaine_tui.widgets.keys_footer import KeysFooter
from fontaine_tui.widgets.safe import Part, assemble
from fontaine_tui.widgets.score_panel import ScorePanel
from fontaine_tui.widgets.verdict_panel import (
    LABEL_STYLE,
    LedgerPanel,
    RulesPanel,
    VerdictBanner,
)


class VerdictScreen(ViewScreen):
    TITLE = "verdict"
    BINDINGS = [
        Binding(
            "left,[",
            "app.step_read(-1)",
            "Prev read",
            id="verdict.prev",
            tooltip="Show the verdict as it read at the previous probe",
        ),
        Binding(
            "right,]",
            "app.step_read(1)",
            "Next read",
            id="verdict.next",
            tooltip="Show the verdict as it read at the next probe",
        ),
        Binding(
            "l", "app.live_read", "Latest", id="verdict.latest", tooltip="Back to the latest read"
        ),
        Binding(
            "a",
            "app.review('accept')",
            "Accept",
            id="review.accept",
            tooltip="Append 'accept' for the shown read to review.jsonl",
        ),
        Binding(
            "f",
            "app.review('flag')",
            "Flag",
            id="review.flag",
            tooltip="Append 'flag' for the shown read to review.jsonl",
        ),
        Binding(
            "n",
            "app.note",
            "Note",
            id="review.note",
            tooltip="Write a note about the shown read into review.jsonl",
        ),
        Binding(
            "u",
            "app.unblind",
            "Unblind",
            id="review.unblind",
            tooltip="Show a blinded read before the endpoint (recorded in review.jsonl with "
            "who and why)",
        ),
        Binding(
            "e",
            "app.export",
            "Export",
            id="review.export",
            tooltip="Write verdict.json and the overlay chart image",
        ),
        # shown while offered: an AMBIGUOUS-BY-INSTRUMENT run with saved checkpoints
        Binding(
            "c",
            "app.rescore",
            "Re-score",
            id="verdict.rescore",
            tooltip="Re-score the saved checkpoints on the other stats surface "
            "(python -m fontaine_engine score, in the background)",
        ),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield VerdictBanner(id="banner")
            yield Static(id="reads")
            yield RulesPanel(id="rules")
            yield Static(id="interpretation")
            yield ScorePanel(id="rescore")
            yield LedgerPanel(id="ledger-panel")
            yield Static(id="review-status")
        yield KeysFooter(compact=True)

    def on_mount(self) -> None:
        super().on_mount()
        self.watch(self.app, "read_step", lambda _: self.on_screen_resume())
        self.watch(self.app, "review_status", lambda _: self.on_screen_resume())

    def draw(self, view: RunView) -> None:
        for part in ("#reads", "#rules", "#interpretation", "#rescore"):
            self.query_one(part).display = not view.blinded
        if view.blinded:
            self._draw_blinded(view)
            return
        step = self.console.read_step
        v = view.verdict_at(step)
        live = step is None or v is view.latest
        self.query_one(VerdictBanner).show(v, live)
        self.query_one("#reads", Static).update(assemble(*_reads(view.verdicts, v)))
        self.query_one(RulesPanel).show(v)
        self.query_one("#interpretation", Static).update(assemble(*_interpretation(v)))
        self.query_one(ScorePanel).show(view.score_offer, view.score_state)
        self.query_one(LedgerPanel).show(v, view.ledger, view.latest.decision)
        self.query_one("#review-status", Static).update(assemble(self.console.review_status))

    def _draw_blinded(self, view: RunView) -> None:
        """Only what blinding keeps: health, ledger, review (core/verdict/blind.py)."""
        self.query_one(VerdictBanner).show_blinded(view.latest)
        self.query_one(LedgerPanel).show(view.latest, view.ledger, blinded=True)
        self.query_one("#review-status", Static).update(
            assemble(blind_note(view.latest), "\n", self.console.review_status)
        )


def _reads(verdicts: Sequence[Verdict], v: Verdict) -> list[Part]:
    """The row of reads to step through, the one shown (`v`) reversed."""
    reads: list[Part] = [("reads: ", "$text-muted")]
    for r in verdicts:
        reads += [_read_chip(r, r.read_step == v.read_step), " "]
    if not verdicts:
        reads.append(("no probe yet", "$text-muted"))
    reads.append(("   ←/→ step through reads, l latest", "$text-muted"))
    return reads


def _read_chip(r: Verdict, shown: bool) -> Part:
    """A read's step and label; a read that still waits for the anchor says nothing yet."""
    wait = waiting(r)
    style = "$text-muted" if wait else LABEL_STYLE.get(r.verdict, "")
    return (f" {r.read_step}:{'—' if wait else r.label} ", style + (" reverse" if shown else ""))


def _interpretation(v: Verdict) -> list[Part]:
    """What the read means (or what it waits for), its reason, and a typed-in caveat."""
    wait = waiting(v)
    shown = interpretation_line(v) or (("read: ", wait) if wait else ("interpretation: ", "—"))
    caveat = typed_in_caveat(v)
    return [
        (shown[0], "bold"),
        shown[1],
        "\n",
        ("reason: ", "$text-muted"),
        v.reason,
        *((("\ncaveat: ", "bold $warning"), caveat) if caveat else ()),
    ]
