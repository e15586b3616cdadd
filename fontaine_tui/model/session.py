"""The console's model, no Textual: one run's store, ledger, warnings and verdicts.

What review, export and a re-score do; methods return results (`Outcome`, model/view.py),
the app turns them into notifications and screens. Screens render the `RunView`s a session
builds; the runs list and opening a run from it are model/runs.py's, reading the ledger
model/ledger.py's.

Its size: one concept over some 630 lines, the state one run's console holds. The batches
it applies (records, the output tail, a follower's notes), the warnings and verdicts it
judges from them and the review it records all read and change the same store and ledger,
so they are kept in one class rather than split by method count.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import Batch, RunSource
from fontaine_tui.core.follow.foreign import SETTLE_S, ForeignRun
from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.launch.rescore import ScoreOffer, ScoreState, rescore, score_offer
from fontaine_tui.core.launch.targets.base import Handle
from fontaine_tui.core.log.read import ingest_lines
from fontaine_tui.core.log.records import Event, Malformed, Record
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import Amendment, Preset
from fontaine_tui.core.run.attempts import Attempt, read_attempts
from fontaine_tui.core.run.evidence import (
    FolderEvidence,
    gate_stopped,
    log_clock,
    seen_probes,
    seen_reads,
    verdict_of,
    verdicts_of,
)
from fontaine_tui.core.run.exits import ExitInfo, shown_detail
from fontaine_tui.core.run.logtail import engine_status
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict.amendments import (
    LogClock,
    check_amendments,
    first_probe_seen,
    last_declared,
)
from fontaine_tui.core.verdict.blindwords import rule_metrics
from fontaine_tui.core.verdict.prereg import parse_utc
from fontaine_tui.core.verdict.record import AmendmentCheck, ReviewState, Verdict
from fontaine_tui.core.watch import alert_book, alerts, traineralerts
from fontaine_tui.model import readout
from fontaine_tui.model.actions import ReviewActions
from fontaine_tui.model.ledger import Ledger, ledger_from, read_ledger_files, review_folder
from fontaine_tui.model.notices import secret_redactor
from fontaine_tui.model.view import Outcome, RunView

TAIL_LINES = 400
TAIL_CHARS = 1000  # a longer printed line is cut to this many characters, as the pane shows it


Process = Handle  # a launched run's process as the console sees it (core/launch/targets)


def waits(note: str) -> bool:
    """Whether a follower's note says it waits for the run's files.

    As "waiting: ...", "waiting for train_log.jsonl", "... removed; waiting for it to reappear".
    """
    return note.startswith("waiting") or "; waiting for" in note


def _counted(every: list[Amendment], checks: tuple[AmendmentCheck, ...]) -> tuple[Amendment, ...]:
    """The short list of amendments that reads as `every` does (Session._amendments).

    The applied ones and the deltas (shown, never applied), the applied extends as one: the
    first one's declaration with the last one's endpoint.
    """
    applied = [
        a
        for a, c in zip(every, checks, strict=True)
        if c.status == "applied" or a.kind == "delta"  # a delta is shown, never applied
    ]
    extends = [a for a in applied if a.kind == "extend"]
    if len(extends) <= 1:
        return tuple(applied)
    first = extends[0]
    return (
        *(a for a in applied if a.kind != "extend"),
        replace(
            extends[-1],
            declared_after_step=first.declared_after_step,
            declared_before_step=first.declared_before_step,
            declared_at=first.declared_at,
        ),
    )


def _cut(line: str) -> str:
    """A printed line as the tail keeps it: its first TAIL_CHARS characters.

    The mark names no count: a blinded read hides a line that holds a number."""
    return line if len(line) <= TAIL_CHARS else line[:TAIL_CHARS] + "… (line cut)"


class Session(ReviewActions):
    def __init__(
        self,
        source: RunSource,
        preset: Preset,
        kind: str,
        process: Process | None = None,
        folder: Path | None = None,
    ) -> None:
        self.source = source
        self.preset = preset  # what the verdict computes with: the frozen one once read
        self.given_preset = preset  # what the command line or registry named
        # False: `preset` is a stand-in until prereg.json is read (a run picked from the runs
        # list over SSH): the frozen one is the run's, and no difference is reported
        self.preset_named = True
        self.kind = kind  # "launch" | "attach" | "replay"
        self.process = process
        self.folder = folder if folder is not None else review_folder(source)
        # where `e` writes when the run folder is not kept (the demo's temporary copy)
        self.export_folder: Path | None = None
        self.store = RunStore()
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.tail_total = 0
        self.note = ""
        self.engine_status = ""  # what a launched engine says it does before its first record
        self.exit_code: int | str | None = None
        self.ledger = Ledger("", preset.sha256, "no prereg.json read yet", None, ())
        self.review_state: ReviewState | None = None  # review.jsonl as checked (a local folder)
        self.blind_asked = False  # the viewer's --blind ([verdict] blind is the preset's)
        self.unblinded_at: int | None = None  # the read unblinded here (model/actions.py)
        self.warnings: tuple[alerts.RunWarning, ...] = ()
        self.warning_book = alert_book.WarningBook()
        self.extra_warnings: dict[str, alerts.RunWarning] = {}  # the babysitter's (notify)
        self._redact: Callable[[str], str] | None = None  # see redact()
        self._attempts_key: object = None
        self._attempts: tuple[Attempt, ...] = ()
        self.gpu_hours: float | None = None
        # why a watcher stopped the run on the preset's stop_on_lock gate (gatestop.py), and
        # the step it ended at once it did (a log that never says its end reads it there)
        self.stop_reason: tuple[str, str] | None = None
        self.stopped_at: int | None = None
        self._records_at: float | None = None  # time.monotonic() of the last decoded records
        self.version = 0
        self._verdict_key: object = None
        self._latest_key: object = None
        self._verdicts: tuple[Verdict, ...] = ()
        self._latest: Verdict | None = None
        self._checked: (
            tuple[
                tuple[Amendment, ...],
                tuple[str, int | None],
                tuple[tuple[int, float], ...],
                tuple[Amendment, ...],
                tuple[AmendmentCheck, ...],
                Preset,
            ]
            | None
        ) = None
        self._declared: tuple[tuple[Amendment, ...], float] | None = None  # the ledger's last
        self.score_state: ScoreState | None = None
        self._offer_key: object = None
        self._offer: ScoreOffer | None = None

    # -- input ---------------------------------------------------------------------------

    def apply(self, batch: Batch) -> bool:
        """Apply one follower batch; True if the store changed."""
        self._begin(batch)
        if batch.lines:
            ingest_lines(self.store, batch.lines, batch.first_line)
        for rec in batch.records:  # a foreign run's, decoded by its format
            self.store.add(rec)
        if batch.odd is not None:  # its eval values not numbers: said through the gate
            self.store.count_odd_values(batch.odd)
        if batch.records:
            self._records_at = time.monotonic()
        self._waited(batch)
        self.version += 1
        return bool(
            batch.lines or batch.records or batch.note or batch.segment or batch.odd is not None
        )

    def _begin(self, batch: Batch) -> None:
        """A batch's segment begun (a rotation: keep everything, count lines on), its note kept."""
        if batch.segment:
            self.store.begin_segment(batch.name, batch.note)
        if batch.note:
            self.note = batch.note

    def _waited(self, batch: Batch) -> None:
        """A follower's note that it waits cleared once the run's lines or records arrive.

        One rule for every follower: what it said while the run's file was not there is
        stale once the file is read, and a note the batch brings itself stays."""
        if (batch.lines or batch.records) and not batch.note and waits(self.note):
            self.note = ""

    def apply_lines(self, batch: Batch) -> Iterator[tuple[int, Record | Malformed | None]]:
        """Apply a batch as `apply` does, a line at a time, for a line-by-line report.

        It yields each non-blank line's number (in its file) and what it became: a record, a
        `Malformed` with the reason, or None for a kind of line the store does not read. Each
        line is yielded as soon as it is applied, so the store read between two yields holds
        the lines up to that one.
        """
        self._begin(batch)
        st = self.store
        for i, raw in enumerate(batch.lines):
            if not raw.strip():
                continue
            n = batch.first_line + i
            yield n, self._add_line(raw, n)
            self.version += 1
        if batch.records:
            self._records_at = time.monotonic()
        for rec in batch.records:
            st.add(rec)
            self.version += 1
            yield 0, rec
        if batch.odd is not None:
            st.count_odd_values(batch.odd)
        self._waited(batch)

    def _add_line(self, raw: bytes, n: int) -> Record | Malformed | None:
        """Line `n` applied: its record, or the `Malformed` the store kept for it (a bare one)."""
        st = self.store
        bad = st.malformed_count
        rec = st.add_line(raw, n)
        if st.malformed_count == bad:
            return rec
        kept = st.malformed[-1] if len(st.malformed) > 0 else None
        return kept if kept is not None and kept.line == n + st.line_base else Malformed(n, "", "")

    def apply_tail(self, batch: Batch) -> int:
        """Engine output lines, decoded, masked, cut and made literal; how many were added.

        Their credentials are masked here, where they are first read (core/secrets.py, with
        the notification URLs this process knows: `redact`), so no pane shows one; the file
        keeps what the command wrote. Only the lines the tail keeps are read; a line longer
        than TAIL_CHARS is cut once masked (a token cut in two would not be recognised)."""
        if batch.segment and self.tail:
            self.tail.append(literal(f"-- {batch.note or 'new file'}"))
        lines = batch.lines
        kept = [raw.decode("utf-8", "replace").rstrip("\r") for raw in lines[-TAIL_LINES:]]
        if kept:
            masked = self.redact("\n".join(kept)).split("\n")  # masked whole, then cut
            self.tail.extend(literal(_cut(x)) for x in masked)
        self.tail_total += len(lines)
        return len(lines)

    def shown_output(self, lines: Sequence[str], hidden: bool) -> tuple[list[str], int]:
        """(the tail's `lines` shown, how many are hidden).

        While the read is `hidden`, a printed line that may quote it is left out, as the
        trainer's alerts are hidden (core/watch/traineralerts.py)."""
        return traineralerts.output_lines(lines, self.rule_metrics(), hidden)

    def poll_process(self) -> bool:
        """True when the launched engine has just exited."""
        if self.process is None or self.exit_code is not None:
            return False
        info = self.process.poll()
        if info is None:
            return False
        self.exit_code = info.code if isinstance(info.code, int) else (info.signal or "?")
        self.version += 1
        return True

    def poll_engine_status(self) -> bool:
        """Read what the launched engine says it is doing (engine/status.py); True if changed.

        It is read until the first record comes, while the engine runs; then it is "" (the
        records say what it does)."""
        now = ""
        if self.kind == "launch" and self.exit_code is None and not self.store.records:
            now = engine_status(self.process)
        if now == self.engine_status:
            return False
        self.engine_status = now
        self.version += 1
        return True

    @property
    def process_alive(self) -> bool:
        return self.process is not None and self.exit_code is None and self.process.poll() is None

    def update_warnings(self, telemetry: TelemetrySnapshot | None, now: float) -> None:
        """Re-evaluate the warning rules (core.watch.alerts) and the GPU-hours they gate on.

        The GPU-hours follow the same definition the gate rule uses (None on CPU).
        """
        exit_info = self.process.poll() if self.process is not None else None
        if exit_info is not None and self.stop_reason is not None:
            exit_info = replace(exit_info, stopped_for=self.stop_reason)
            self.stopped_at = max(exit_info.last_step, self.store.last_step)
        launched_ts = self._launched_ts()
        now = self._judged_now(now)
        self.warnings = self.sorted_warnings(
            alert_book.evaluate(
                self.warning_book,
                self.store,
                self.preset,
                telemetry,
                now,
                exit_info,
                launched_ts,
                self.finished(),
                self.settling(),
                # the posts stay blinded whatever a console unblinds (model/babysitter.py)
                self.blind_hides(self.latest()),
                self.redact if self.store.alert_count or self.store.bad_alert_count else None,
            )
            + list(self.extra_warnings.values())
        )
        ctx = alert_book.context_for(self.store, self.preset, telemetry, launched_ts)
        self.gpu_hours = alerts.gpu_hours_used(self.store, now, exit_info, ctx)

    def _judged_now(self, now: float) -> float:
        """The time the rules judge at: a replay's is its log's own clock, where it has times."""
        if self.kind != "replay" or not self.store.steps:
            return now
        logged = self.store.columns["time"][-1]
        return logged if math.isfinite(logged) else now  # a log without times: this one

    def _launched_ts(self) -> float | None:
        """The ledger's launch time as a timestamp; None without one or where it is unreadable."""
        try:
            return parse_utc(self.ledger.launched_at) if self.ledger.launched_at else None
        except ValueError:
            return None

    def redact(self, text: str) -> str:
        """`text` with every notification URL this process knows hidden (a trainer's words).

        The URLs are read once, at the first alert, event or printed line the trainer's
        words bring."""
        if self._redact is None:
            self._redact = secret_redactor(self.given_preset)
        return self._redact(text)

    def event_words(self, e: Event, hidden: bool) -> tuple[str, str]:
        """A log event's (name, detail) as every surface shows it.

        Masked, and while the read is `hidden` its words that may quote it hidden, as the
        trainer's alerts are (core/watch/traineralerts.py)."""
        return traineralerts.event_words(e, self.rule_metrics(), hidden, self.redact)

    def exit_words(self, info: ExitInfo, hidden: bool) -> str:
        """An exit in words as every surface shows it.

        While the read is `hidden`, the trainer's words at its exit (its error, its last
        printed line) that may quote it are hidden, as its alerts are (core/run/exits.py's
        `shown_detail`)."""
        return info.describe(self.rule_metrics(), hidden)

    def rule_metrics(self) -> tuple[str, ...]:
        """The metrics the verdict's rules read, and the preset's labels for its classes.

        The trainer's words may not name them while the read is hidden."""
        return rule_metrics(self.preset.verdict, self.preset.labels)

    def settling(self) -> bool:
        """Whether a followed foreign run's records came within twice its settle time.

        Its last step's probe may then still be held (core/follow/foreign.py), so its silence
        is not judged yet.
        """
        return (
            isinstance(self.source, ForeignRun)
            and self._records_at is not None
            and time.monotonic() - self._records_at < 2 * SETTLE_S
        )

    @staticmethod
    def sorted_warnings(warnings: list[alerts.RunWarning]) -> tuple[alerts.RunWarning, ...]:
        return tuple(sorted(warnings, key=lambda w: -alerts.SEVERITIES.index(w.severity)))

    def score_offer(self, v: Verdict) -> ScoreOffer | None:
        """The re-score to offer for the run's latest read (a local run folder only).

        None while the read is hidden: the offer names its label, the re-score its values."""
        if self.folder is None or self.hides(v):
            return None
        key = (self.version, v.verdict)
        if key != self._offer_key:  # a read of the checkpoints folder per change, not per frame
            self._offer, self._offer_key = score_offer(RunFolder(self.folder), v.verdict), key
        return self._offer

    async def rescore(self, changed: Callable[[], None] = lambda: None) -> Outcome:
        """Run the offered re-score to its end and read back what it wrote.

        The re-score is a subprocess, so the loop never blocks. `changed` is called once it
        started.
        """
        offer = self.score_offer(self.latest())
        if offer is None:
            return Outcome(
                "re-score: offered for an AMBIGUOUS-BY-INSTRUMENT verdict of an "
                "engine run with saved checkpoints",
                "warning",
            )
        if self.score_state is not None and self.score_state.status == "running":
            return Outcome(f"re-score already running: {self.score_state.offer.command}", "warning")
        self.score_state = ScoreState(offer, "running", f"running: {offer.command}")
        self.version += 1
        changed()
        shown = seen_probes(self.store, self.hides(self.latest()))
        own = {step: probe.eval_chunk_mae for step, probe in shown.items()}
        self.score_state = await rescore(offer, own)
        self.version += 1
        done = self.score_state.status == "done"
        return Outcome(
            f"re-score {'done' if done else 'failed'}: {self.score_state.detail}",
            "information" if done else "error",
        )

    # -- ledger --------------------------------------------------------------------------

    async def read_ledger(self) -> None:
        """Read prereg.json (hash check) and amendments.jsonl.

        They come from the run folder or through the source, so a run over SSH has its ledger
        too.
        """
        if self.folder is None and not isinstance(self.source, RunSource):
            self.ledger = Ledger("", self.preset.sha256, "no run folder (log only)", None, ())
            return
        try:
            files = await read_ledger_files(self.folder, self.source)
        except InputError as exc:  # the host did not answer: the ledger read before stays
            self.note = f"prereg.json and amendments not re-read: {exc}"
            return
        if files.note:
            self.note = files.note
        where = str(self.folder) if self.folder is not None else self.source.label
        given = self.given_preset if self.preset_named else None
        self.ledger, self.preset = ledger_from(files, where, given, self.preset)
        self.check_review()  # the review trail is checked where the ledger is
        self._verdict_key = self._latest_key = None
        self.version += 1

    # -- output --------------------------------------------------------------------------

    def latest(self) -> Verdict:
        """The verdict as it reads now (the ledger's amendments applied)."""
        key = self._key()
        if key != self._latest_key or self._latest is None:
            applied, checks, bare = self._amendments()
            self._latest = verdict_of(
                self.store, bare, self._context(applied, checks), stopped_at=self.stopped_at
            )
            self._latest_key = key
        return self._latest

    def _context(
        self, applied: tuple[Amendment, ...], checks: tuple[AmendmentCheck, ...]
    ) -> FolderEvidence:
        """The run folder's context of a read (core/run/evidence.py).

        The ledger's checks are worked out once (`_amendments`)."""
        return FolderEvidence(
            applied,
            self.ledger.provenance,
            self.attempts(),
            self.review_state,
            checks,
            self.ledger.error,  # a break: the blind holds the read (evidence.py's `withheld`)
        )

    def stop_reached(self) -> int | None:
        """Where attempts.jsonl says a stop_on_lock gate stopped the run, once the log is there.

        A replay reads its way to that step; None before it, or without such a stop."""
        stop = gate_stopped(self.attempts())
        return stop if stop is not None and self.store.last_step >= stop else None

    def _amendments(
        self,
    ) -> tuple[tuple[Amendment, ...], tuple[AmendmentCheck, ...], Preset]:
        """What a read needs of the preset's and the ledger's amendments, worked out once.

        That is the checks of every amendment, a short list that reads the same, and the preset
        without its own amendments (the short list holds those that count). A refused
        amendment changes nothing a read uses (neither the scale nor the endpoint in force).
        Applied extends move the endpoint in turn. So the declared deltas, the applied scales
        and one extend (the first applied one's declaration, the last one's endpoint) give the
        same read, and the verdict then carries the checks of them all. A read at each new
        probe costs a few amendments, not all of them (20,000 declarations, in the ledger or
        the preset, were seconds of work per probe).
        """
        ledger = self.ledger.amendments
        if self._declared is None or self._declared[0] is not ledger:
            self._declared = (ledger, last_declared(ledger))
        # a probe logged after the last declaration changes no check (the log's own clock)
        clock = log_clock(self.store, self.preset) if ledger else LogClock()
        ticks = clock.key(self._declared[1])
        first_seen = first_probe_seen(self.store)  # a level read's scale first affects it
        cache = self._checked
        held = (self.preset.sha256, first_seen)
        if cache is None or cache[0] is not ledger or cache[1:3] != (held, ticks):
            every = [*self.preset.amendments, *ledger]
            checks = tuple(check_amendments(every, self.preset, clock, first_probe=first_seen))
            cache = self._checked = (
                ledger,
                held,
                ticks,
                _counted(every, checks),
                checks,
                replace(self.preset, amendments=()),
            )
        return cache[3], cache[4], cache[5]

    def _key(self) -> object:
        return (
            id(self.store),
            self.store.probes_version,
            len(self.store.metas),
            self.store.ended_at,  # a run's end makes a read without its endpoint final
            self.stopped_at,  # ... and so does a stop on the stop_on_lock gate
            self.stop_reached(),  # ... or one attempts.jsonl records, once the log reaches it
            self.preset.sha256,
            self.ledger.amendments,
            self.ledger.error,  # a break holds the read blinded (evidence.py's `withheld`)
            self.review_state,
        )

    def _read_verdicts(self) -> tuple[tuple[Verdict, ...], Verdict]:
        key = self._key()
        if key != self._verdict_key:
            applied, checks, bare = self._amendments()
            self._verdicts = tuple(verdicts_of(self.store, bare, self._context(applied, checks)))
            self._verdict_key = key
        return self._verdicts, self.latest()

    def ended(self) -> bool:
        """Whether the run has ended.

        It has when the last event its log recorded is an `end` or an `error`. The log may be
        that of a foreign source that knows its end, as an MLflow run's status.
        """
        ev = self.store.events
        return bool(ev) and ev[-1].event in ("end", "error")

    def failed(self) -> bool:
        ev = self.store.events
        return bool(ev) and ev[-1].event == "error"

    def finished(self) -> bool:
        """Whether the run is over by what it wrote.

        It is when an `end` or `error` event comes last. A run another trainer writes may never
        say it ended, so for it, its probe at the endpoint in force also counts, as the final
        read is in.
        """
        if alerts.logged_over(self.store):
            return True
        return self.preset.foreign and self.store.has_probe(self.latest().endpoint_step)

    def view(self) -> RunView:
        verdicts, latest = self._read_verdicts()
        st = self.store
        status = readout.run_status(
            self.kind, self.exit_code, bool(st.steps), self.finished(), self.failed()
        )
        meta = st.metas[-1].run if st.metas else ""
        blinded = self.hides(latest)
        if blinded:  # nothing of the rule's read reaches a screen (core/verdict/blind.py)
            verdicts = ()
        return RunView(
            self.version,
            self.preset.run_name or meta,
            self.source.label,
            self.preset,
            status,
            st,
            replace(
                readout.progress(st, self.preset, latest.endpoint_step), gpu_hours=self.gpu_hours
            ),
            verdicts,
            latest,
            tuple(readout.probe_rows(seen_probes(st, blinded), verdicts)),
            self.ledger,
            self.warnings,
            self.note,
            readout.status_tone(self.kind, self.exit_code, bool(st.steps), self.failed()),
            None if blinded else self.score_offer(latest),
            self.score_state,
            self.attempts_shown(blinded),
            blinded,
            seen_reads(st, verdicts, blinded),
            engine_status=self.engine_status,
        )

    def attempts_shown(self, hidden: bool) -> tuple[Attempt, ...]:
        """attempts.jsonl as the monitor shows it.

        While the read is `hidden`, each exit's words that may quote it are hidden
        (core/run/exits.py's `shown_detail`)."""
        metrics = self.rule_metrics()
        return tuple(
            replace(a, detail=shown_detail(a.cause, a.detail, metrics, hidden))
            for a in self.attempts()
        )

    def attempts(self) -> tuple[Attempt, ...]:
        """attempts.jsonl of a local run folder, read again only when it changed.

        A replay reads it too: a stop on the run's lock recorded there makes its final read
        what `verdict` reads (core/run/evidence.py applies it once the log reaches it)."""
        if self.folder is None:
            return ()
        folder = RunFolder(self.folder)
        try:
            st = folder.attempts.stat()
        except OSError:
            return ()
        alive = self.process_alive
        key = (st.st_mtime_ns, st.st_size, alive)  # a death changes "running" to "unknown"
        if key != self._attempts_key:
            self._attempts, self._attempts_key = tuple(read_attempts(folder)), key
        return self._attempts
