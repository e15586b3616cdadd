"""The disambiguating re-score of an AMBIGUOUS-BY-INSTRUMENT run.

The panel shows the command, its progress, and the re-scored eval MAE per step beside the
run's own.
"""

from __future__ import annotations

import math

from textual.widgets import Static

from fontaine_tui.core.launch.rescore import STATS_WORDS, ScoreOffer, ScoreState
from fontaine_tui.widgets.safe import assemble

STATUS_STYLE = {"running": "$warning", "done": "$success", "failed": "$error"}


def _num(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.4f}" if math.isfinite(x) else repr(x)


def _diff(run: float | None, rescored: float) -> str:
    if run is None or not (math.isfinite(run) and math.isfinite(rescored)):
        return "—"
    return f"{rescored - run:+.4f}"


class ScorePanel(Static):
    """Shown only while a re-score is offered (or has run)."""

    DEFAULT_CSS = """
    ScorePanel { height: auto; border: round $warning; padding: 0 1; display: none;
                 border-title-color: $warning; }
    """

    def show(self, offer: ScoreOffer | None, state: ScoreState | None, key: str = "c") -> None:
        self.display = offer is not None or state is not None
        if not self.display:
            return
        self.border_title = "disambiguator: re-score the saved checkpoints"
        shown = state.offer if state is not None else offer
        assert shown is not None
        parts: list[tuple[str, str] | str] = [
            f"the same checkpoints' probe set on the {shown.surface} surface "
            f"({STATS_WORDS.get(shown.stats, shown.stats)}); ",
            (key, "bold reverse"),
            " runs it in the background\n",
            ("$ ", "$text-muted"),
            shown.command,
        ]
        if state is not None:
            parts += [
                "\n",
                (state.status, f"bold {STATUS_STYLE.get(state.status, '$text')}"),
                f": {state.detail}",
            ]
            if state.rows:
                parts += [
                    "\n",
                    (
                        f"{'step':>8}  {'run eval_chunk_mae':>20}  "
                        f"{'re-scored (' + state.offer.surface + ')':>28}  "
                        f"{'difference':>10}",
                        "bold",
                    ),
                ]
                for r in state.rows:
                    parts.append(
                        f"\n{r.step:>8}  {_num(r.run):>20}  {_num(r.rescored):>28}  "
                        f"{_diff(r.run, r.rescored):>10}"
                    )
        self.update(assemble(*parts))
