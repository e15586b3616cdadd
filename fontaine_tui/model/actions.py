"""What the console's review keys do to a run folder: review.jsonl, verdict.json, unblinding.

A mixin of `Session` (model/session.py): each method returns an `Outcome` the app turns into
a notification. Blinded monitoring (core/verdict/blind.py) lives here too: what the session
hides, and the recorded unblinding that shows it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from fontaine_tui.core.charts.probes import probes_chart
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.runfolder import LOG, PREREG, REVIEW
from fontaine_tui.core.seal import export as exporter
from fontaine_tui.core.verdict import blind
from fontaine_tui.core.verdict import review as reviewer
from fontaine_tui.core.verdict.record import ReviewState, Verdict
from fontaine_tui.model.view import Outcome, RunView

NO_FOLDER = Outcome("review needs a run folder (none for this source)", "error")


def reviewed_read(view: RunView, v: Verdict) -> str:
    """The read a review line is about, as the line records it: "HEALTHY at step 500"."""
    label = "BLINDED" if view.blinded else v.label
    return f"{label} at step {v.read_step}{' (provisional)' if v.provisional else ''}"


class ReviewActions:
    """review.jsonl's accept / flag / note / unblind, and export, for a Session."""

    folder: Path | None
    # set where the run folder is a temporary copy (the demo's): exports go here instead, so
    # they outlive it
    export_folder: Path | None
    preset: Preset
    review_state: ReviewState | None
    version: int
    blind_asked: bool  # the viewer's --blind
    # the probe step this session unblinded (recorded when there is a run folder): that read
    # and the ones before it show; a later probe is hidden again until another recorded look
    unblinded_at: int | None

    def blind_hides(self, v: Verdict) -> bool:
        """Whether the blind (the preset's, or this viewer's --blind) hides `v`.

        That is whatever this console unblinded: notifications, warnings that quote the read,
        and files the folder's next reader would find go by it."""
        return blind.hidden(self.preset, v, self.blind_asked)

    def hides(self, v: Verdict) -> bool:
        """Whether this session hides the read `v` (blinded, not final, not unblinded here)."""
        seen = self.unblinded_at
        if seen is not None and v.read_step is not None and v.read_step <= seen:
            return False
        return self.blind_hides(v)

    def review(
        self,
        view: RunView,
        step: int | None,
        action: str,
        note: str = "",
        clock: Callable[[], float] = time.time,
    ) -> Outcome:
        """Append accept / flag / note for the read at `step` to review.jsonl.

        The outcome names the line written and the file's full path."""
        v = view.verdict_at(step)
        refused = self.review_refused(view, action)
        if refused is not None:
            return refused
        if self.folder is None:  # said by review_refused; here for the type checker
            return NO_FOLDER
        path = self.folder / REVIEW
        try:
            entry = reviewer.append(path, action, v, note, clock, hidden=view.blinded)
        except OSError as exc:
            return Outcome(f"{path}: cannot append ({exc.strerror})", "error")
        except InputError as exc:  # a trail that does not hold is never extended
            self.check_review()
            return Outcome(f"not recorded: {exc}", "error")
        broken = self._trail_broken()
        return Outcome(
            f"appended line {entry.line} to {path}: {action} {reviewed_read(view, v)}; "
            f"{entry.line} line(s), {f'CHAIN BROKEN: {broken}' if broken else 'chain intact'}",
            "error" if broken else "information",
        )

    def review_refused(self, view: RunView, action: str) -> Outcome | None:
        """Why `action` cannot be appended at all (nothing to ask first), or None."""
        if view.blinded and action != "note":
            return Outcome(f"{action}: the read is blinded (u unblinds, recorded)", "error")
        return NO_FOLDER if self.folder is None else None

    def review_question(self, view: RunView, step: int | None, action: str) -> str:
        """What `action` would append, and where: asked before a line is written for good."""
        where = REVIEW if self.folder is None else str(self.folder / REVIEW)
        return f"Append '{action}' for {reviewed_read(view, view.verdict_at(step))} to {where}?"

    def export(self, view: RunView, step: int | None, scaled: bool) -> Outcome:
        """verdict.json and the overlay chart for the read at `step` (blocking: a thread).

        They go into the run folder, or into `export_folder` (made if missing) where one is
        set: the outcome then says they are kept."""
        v = view.verdict_at(step)
        if self.blind_hides(v):  # unblinded here or not: the
            # folder's next reader would find the read in verdict.json
            return Outcome(
                "export: the read is blinded until the endpoint (verdict.json would show it to "
                "the folder's next reader)",
                "error",
            )
        into = self.export_folder or self.folder
        if into is None:
            return Outcome("export needs a run folder (none for this source)", "error")
        if (made := self._make_export_folder()) is not None:
            return made
        spec = probes_chart(view.seen, view.preset, v, scaled)
        try:
            result = exporter.export(into, v, spec)
        except InputError as exc:  # a file there this program did not write: left as it is
            return Outcome(f"export not written: {exc}", "error")
        except OSError as exc:  # a folder that cannot be written
            return Outcome(f"export not written: {exc.filename or into}: {exc.strerror}", "error")
        broken = self._trail_broken()
        return _exported(result, self.export_folder is not None, broken)

    def _make_export_folder(self) -> Outcome | None:
        """The export folder made where one is set; the refusal where it cannot hold an export."""
        folder = self.export_folder
        if folder is None:
            return None
        if refused := _not_an_export_folder(folder):
            return Outcome(f"{folder}: not written: {refused}", "error")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return Outcome(f"{folder}: cannot make it ({exc.strerror})", "error")
        return None

    def _trail_broken(self) -> str:
        """review.jsonl checked again: why its chain does not hold ("" when it does, or none)."""
        state = self.check_review()
        return state.broken if state is not None else ""

    def check_review(self) -> ReviewState | None:
        """Check review.jsonl again (a local run folder only) and keep what it says."""
        try:
            state = None if self.folder is None else reviewer.state(self.folder)
        except InputError as exc:  # a file beside it that cannot be read
            state = ReviewState(0, "", str(exc))
        if state != self.review_state:
            self.review_state, self.version = state, self.version + 1
        return state

    def unblind(self, view: RunView, why: str, clock: Callable[[], float] = time.time) -> Outcome:
        """Show the blinded read in this session; a pre-registered blind's look is recorded.

        The look is a review.jsonl line naming who and why; it shows the latest read (and the
        ones before it), and a later probe is hidden again. A viewer's own --blind is lifted
        without a record."""
        if not view.blinded:
            return Outcome("nothing is blinded", "warning")
        why = why.strip()
        if not blind.reason_ok(why):
            return Outcome(f"unblind: {blind.REASON_RULE}", "error")
        step = view.latest.read_step
        if not self.preset.verdict.blind:  # the viewer's own choice: nothing to record
            self.unblinded_at, self.version = step, self.version + 1
            return Outcome("unblinded in this console (--blind was this viewer's)", "warning")
        if self.folder is None:
            return Outcome(
                "unblind: the blind is pre-registered and this source has no run folder to "
                "record it in (unblind where the run folder is: fontaine-tui verdict RUN "
                "--unblind WHY)",
                "error",
            )
        try:
            entry = reviewer.record_look(self.folder, view.latest, why, clock)
        except OSError as exc:
            return Outcome(f"{self.folder / REVIEW}: cannot append ({exc.strerror})", "error")
        except InputError as exc:  # a trail that does not hold is never extended
            self.check_review()
            return Outcome(f"not unblinded: {exc}", "error")
        self.check_review()
        self.unblinded_at, self.version = step, self.version + 1
        return Outcome(
            f"unblinded: review.jsonl line {entry.line} records {entry.who} at step "
            f"{entry.read_step}: {why}",
            "warning",
        )


def _exported(result: exporter.ExportResult, kept: bool, broken: str) -> Outcome:
    """What an export wrote; a chart not drawn a warning, a broken review trail an error.

    `kept`: written into the export folder, which outlives the run folder's temporary copy.
    """
    return Outcome(
        f"wrote {result.verdict_path}"
        + (f" and {result.chart_path}" if result.chart_path else f"; {result.chart_message}")
        + ("; kept after quitting (the run folder is a temporary copy)" if kept else "")
        + (f"; REVIEW TRAIL BROKEN: {broken}" if broken else ""),
        "error" if broken else "information" if result.chart_path else "warning",
    )


def _not_an_export_folder(folder: Path) -> str:
    """Why `folder` is no place for an export kept apart from its run, or "".

    A link could lead into any folder, and a folder holding a run's log or prereg.json is a run
    folder: its verdict.json is that run's, not this one's to replace."""
    if folder.is_symlink():
        return "it is a link (an export goes only into a folder of its own)"
    if folder.exists() and not folder.is_dir():
        return "it is not a folder"
    for name in (LOG, PREREG):
        if (folder / name).exists():
            return f"it holds a run ({name}), whose verdict.json is not this one's"
    return ""
