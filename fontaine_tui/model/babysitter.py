"""What every watcher of a run does between two checks: warnings and reads sent, polls taken.

It is what the console, `launch --plain` and `fontaine-tui babysit` each do between two checks
of a run, so the three send the owner the same things.

After each warnings update (`Session.update_warnings`), `tick` sends what is new (each new
warning at its level, each probe's read not yet sent), takes a babysit poll when the preset's
[babysit] cadence says one is due (a line in babysit.jsonl, a notification), and turns failed
deliveries into a warning in the panel. With the preset's `[gates] stop_on_lock`, it stops the
run once its decision locks or the GPU-hours gate is reached (core/watch/gatestop.py), in a
thread, the way `fontaine-tui stop` does; `exit_of` then gives the exit that cause. Only the watcher holding the run's `WatchLock`
babysits it; another watcher of the same run shows the run but neither polls nor posts.
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.log.records import Event
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.run.endpoint import planned_steps
from fontaine_tui.core.run.exits import ExitInfo, shown_detail
from fontaine_tui.core.runs.registry import default_path
from fontaine_tui.core.verdict.prereg import parse_utc
from fontaine_tui.core.verdict.record import Verdict
from fontaine_tui.core.verdict.text import render, render_blinded
from fontaine_tui.core.watch.alerts import RunWarning
from fontaine_tui.core.watch.babysit import (
    BABYSIT_LOG,
    Cadence,
    PollClock,
    WatchLock,
    append_poll,
    poll_record,
    posted_record,
    read_posted,
    resumed_clock,
)
from fontaine_tui.core.watch.gatestop import gate_stop
from fontaine_tui.core.watch.traineralerts import is_alert_rule
from fontaine_tui.model.notices import RunNotices
from fontaine_tui.model.session import Session

NOTIFY_RULE = "notify"  # the panel's warning for deliveries that failed
LEDGER_RULE = "ledger"  # the amendment ledger does not hold (polls and posts name the break)


def state_dir() -> Path:
    """Where the watchers keep their locks and a remote run's polls: beside the registry."""
    return default_path().parent


def _launched(session: Session) -> float | None:
    try:
        return parse_utc(session.ledger.launched_at) if session.ledger.launched_at else None
    except ValueError:
        return None


class Babysitter:
    """Polls and notifications for one `Session`.

    With `notices` None, nothing is sent (polls are still written). With `poll_log` None,
    polls are neither written nor taken.
    """

    def __init__(
        self,
        session: Session,
        notices: RunNotices | None,
        *,
        watcher: str,
        poll_log: Path | None,
        lock: WatchLock | None = None,
        clock: Callable[[], float] = time.time,
        say: Callable[[str], None] = print,
        since: float | None = None,
        auto_final: bool = False,
    ) -> None:
        self.session, self.notices, self.watcher = session, notices, watcher
        self.auto_final = auto_final  # the log's end sends the final read (no launcher here)
        self.finalized = False
        self.poll_log, self.lock, self.clock, self.say = poll_log, lock, clock, say
        self.since = since  # polls before this (an earlier attempt's) do not count
        self._clock: PollClock | None = None
        self._sent_probes: set[int] = set(session.store.probe_steps())  # read before: not news
        # what an earlier watcher of this run posted (babysit.jsonl): not posted again
        self._posted = (
            read_posted(poll_log) if poll_log is not None and notices is not None else set()
        )
        # a watcher that comes to a run already under way (attach, babysit): its first check
        # of the log posts the newest probe read not yet sent to anyone, not the whole history
        self._catching_up = session.kind == "attach"
        self._failures_seen = 0
        self.polls = 0
        self.last_poll: dict[str, object] | None = None  # set by the tick that took it
        self.stop_reason: tuple[str, str] | None = None  # why it stopped the run (gatestop.py)
        self.stopper: threading.Thread | None = None  # the stop under way, once started

    @classmethod
    def for_session(
        cls,
        session: Session,
        watcher: str,
        host: str,
        say: Callable[[str], None],
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
        since: float | None = None,
        auto_final: bool = False,
    ) -> Babysitter:
        """The watcher that babysits `session`'s run, or one that only shows it.

        The second kind is made when another watcher holds the run's lock.
        """
        key = f"{host}:{session.folder if session.folder is not None else session.source.label}"
        lock = WatchLock(state_dir() / "watch", key)
        if not _taken(lock, say):
            say(
                f"babysat by {lock.holder()} (lock {lock.path}): this {watcher} shows the "
                "run but neither polls nor notifies"
            )
            return cls(session, None, watcher=watcher, poll_log=None, clock=clock, say=say)
        preset = session.given_preset
        notices = RunNotices.configured(
            preset.run_name or session.source.label,
            say,
            preset,
            env if env is not None else os.environ,
        )
        if session.folder is not None:
            poll_log = session.folder / BABYSIT_LOG
        else:  # a run over SSH: its polls are kept here, by host and folder
            poll_log = lock.path.with_suffix(".babysit.jsonl")
        return cls(
            session,
            notices,
            watcher=watcher,
            poll_log=poll_log,
            lock=lock if lock.held else None,
            clock=clock,
            say=say,
            since=since,
            auto_final=auto_final,
        )

    # -- events ---------------------------------------------------------------------------

    def launched(self, preset: str, folder: str, what: str, sha: str) -> None:
        if self.notices is not None:
            self.notices.launched(preset, folder, what, sha)

    def probe(self, step: int, verdict: Verdict) -> None:
        """Send a probe's read once, and once across watchers.

        The plain report sends it the moment the line lands. A read posted before, by this
        run's record, is not news.
        """
        if step in self._sent_probes:
            return
        self._sent_probes.add(step)
        logged = self.session.store.probe_time(step)
        if self.notices is not None and not self._was_posted("probe", step, logged):
            self.notices.probe(step, verdict, self.hides(verdict))
            self._record_post("probe", step, logged)

    def hides(self, v: Verdict) -> bool:
        """Whether the posts hide the read `v` (blinded and not final).

        An unblinding in a console is that viewer's: the posts stay blinded until the endpoint.
        """
        return self.session.blind_hides(v)

    @staticmethod
    def _posted_key(what: str, step: int, logged: float) -> tuple[str, int, float | None]:
        return what, step, logged if math.isfinite(logged) else None  # as read_posted reads it

    def _was_posted(self, what: str, step: int, logged: float) -> bool:
        return self._posted_key(what, step, logged) in self._posted

    def _record_post(self, what: str, step: int, logged: float, said: str = "") -> None:
        """The post is queued: babysit.jsonl says so, for the next watcher of this run."""
        self._posted.add(self._posted_key(what, step, logged))
        if self.poll_log is None:
            return
        try:
            append_poll(
                self.poll_log, posted_record(what, step, logged, self.clock(), self.watcher, said)
            )
        except OSError as exc:
            self.say(f"warn: {self.poll_log}: not written ({exc.strerror or exc})")

    def trainer_alert(self, w: RunWarning) -> None:
        """Post an alert the trainer raised, once, and once across watchers.

        babysit.jsonl records it with its words: a watcher that reads the log again, or
        comes back, does not post it again."""
        if self.notices is None:
            return
        step = int(w.numbers.get("step", -1))
        logged = w.numbers.get("logged", math.nan)
        if self._was_posted(w.rule, step, logged):
            return
        words = self.notices.trainer_alert(w, step if step >= 0 else None)
        self._record_post(w.rule, step, logged, f"{w.severity}: {words}")

    def exit_words(self, info: ExitInfo) -> tuple[str, str]:
        """(the exit in words, its cause's detail) as the posts may say them.

        While the posts hide the read, the trainer's words at its exit that may quote it are
        hidden (core/run/exits.py's `shown_detail`)."""
        hidden = self.hides(self.session.latest())
        metrics = self.session.rule_metrics()
        return self.session.exit_words(info, hidden), shown_detail(
            info.cause, info.cause_detail, metrics, hidden
        )

    def incident(self, attempt: int, cause: str, text: str, step: int | None) -> None:
        if self.notices is not None:
            self.notices.incident(attempt, cause, text, step)

    def restarting(self, attempt: int, said: str, step: int | None) -> None:
        if self.notices is not None:
            self.notices.restarting(attempt, said, step)

    def gate_stopped(self, attempt: int, cause: str, text: str, step: int | None) -> None:
        if self.notices is not None:
            self.notices.gate_stopped(attempt, cause, text, step)

    def tick(self, telemetry: TelemetrySnapshot | None, now: float | None = None) -> None:
        """After `session.update_warnings`: what is new goes out; a due poll is taken."""
        now = self.clock() if now is None else now
        self.last_poll = None
        self._post_new_warnings()
        self._send_fresh_probes()
        self._ledger_break(now)
        self._poll(telemetry, now)
        self._failed_deliveries(now)
        self._gate_stop()
        if self.auto_final and not self.finalized:
            self._final_once_over()

    def _post_new_warnings(self) -> None:
        """The warnings the last judging raised: the trainer's alerts once, the rest posted.

        The first poll is a poll; an early end is the incident the watcher's finish sends.
        """
        session = self.session
        for w in session.warning_book.last_new:
            if w.rule in ("first-poll", "exited-early"):
                continue
            if is_alert_rule(w.rule):
                self.trainer_alert(w)
            elif self.notices is not None:
                self.notices.warning(w, session.store.last_step or None)

    def _send_fresh_probes(self) -> None:
        """Each probe not sent yet, with the verdict at its step.

        Catching up on a log read at once, only the newest probe goes out: the older are taken
        as sent.
        """
        session = self.session
        fresh = sorted(set(session.store.probe_steps()) - self._sent_probes)
        if self._catching_up and session.store.last_step:
            self._catching_up = False
            fresh, older = fresh[-1:], fresh[:-1]
            self._sent_probes.update(older)
        if fresh:
            view = session.view()
            for step in fresh:
                self.probe(step, view.verdict_at(step))

    def _final_once_over(self) -> None:
        """The final read posted once the log says the run is over, unless a watcher did."""
        over = self._over()
        if over is None:
            return
        step, logged, line = over
        if self.notices is not None and self._was_posted("verdict", step, logged):
            self.finalized = True  # an earlier watcher posted this end's verdict
            return
        verdict = self.session.latest()
        label = self.session.source.label
        self.final(verdict, render(verdict, label), line, posted=(step, logged))

    def _over(self) -> tuple[int, float, str] | None:
        """The run's end as (step, logged time, the line) when the log says it is over, else None.

        The log says so by its `end` event. For a foreign run, its `error` event or its final
        read says so too, since another trainer may never say its run ended.
        """
        session = self.session
        events = session.store.events
        if session.ended():
            end = events[-1]
            return end.step, end.time, f"the log ended at step {end.step}: {self._said(end)}"
        if not (session.preset.foreign and session.finished()):
            return None
        if events and events[-1].event == "error":
            end = events[-1]
            return end.step, end.time, f"the run failed at step {end.step}: {self._said(end)}"
        step = session.latest().endpoint_step
        return step, session.store.probe_time(step), f"its final read is in (step {step})"

    def _said(self, end: Event) -> str:
        """The end event's detail as the posts may say it.

        Masked, and hidden while the posts hide the read and its words may quote it
        (core/watch/traineralerts.py's `event_words`)."""
        return self.session.event_words(end, self.hides(self.session.latest()))[1]

    def _gate_stop(self) -> None:
        """Stop the run, once, when the preset's stop_on_lock gate asks for it.

        Only the watcher that babysits the run stops it, and only a run it has a process of."""
        session, process = self.session, self.session.process
        if self.stop_reason is not None or self.poll_log is None or process is None:
            return
        reason = gate_stop(
            session.store,
            session.preset,
            session.latest(),
            session.warnings,
            asked_blind=session.blind_asked,
        )
        if reason is None or process.poll() is not None:
            return
        self.stop_reason = session.stop_reason = reason
        self.say(f"{reason[1]}: stop_on_lock stops the run (SIGINT, then SIGTERM, then SIGKILL)")

        def stop() -> None:
            try:
                process.stop()
            except (InputError, OSError, RuntimeError) as exc:
                self.say(f"warn: the run was not stopped ({exc})")

        self.stopper = threading.Thread(target=stop, name="gate-stop", daemon=True)
        self.stopper.start()

    def exit_of(self, info: ExitInfo) -> ExitInfo:
        """The exit, with the cause of the stop this watcher made (if it made one)."""
        if self.stop_reason is None:
            return info
        return dataclasses.replace(info, stopped_for=self.stop_reason)

    def _poll(self, telemetry: TelemetrySnapshot | None, now: float) -> None:
        if self.poll_log is None:
            return
        if self._clock is None:
            self._clock = resumed_clock(
                Cadence.of(self.session.given_preset),
                _launched(self.session),
                self.poll_log,
                self.since,
            )
        kind = self._clock.due(self.session.store, now)
        if kind is None:
            return
        session = self.session
        rec = poll_record(
            kind,
            session.store,
            telemetry,
            session.latest(),
            session.warnings,
            now,
            planned_steps(session.preset, session.latest().endpoint_step),
            self.watcher,
            session.gpu_hours,
            self.hides(session.latest()),
        )
        self._clock.done(now)
        self.polls += 1
        self.last_poll = rec
        try:
            append_poll(self.poll_log, rec)
        except OSError as exc:
            self.say(f"warn: {self.poll_log}: poll not written ({exc.strerror or exc})")
        if self.notices is not None:
            self.notices.poll(rec, self._clock.count)

    def _ledger_break(self, now: float) -> None:
        """Name a broken amendment ledger in the polls (babysit.jsonl) and post it once.

        The read stays BLINDED on a blinded run (core/run/evidence.py's `withheld`), and
        `verdict` refuses it: a watcher that says nothing more would leave the break unseen."""
        error = self.session.ledger.error
        held = self.session.extra_warnings.get(LEDGER_RULE)
        if not error:
            if held is not None:  # the ledger holds again (mended from a copy)
                self._hold(LEDGER_RULE, None)
            return
        if held is not None and held.message == error:
            return
        warning = RunWarning(LEDGER_RULE, "alert", now, error, {})
        self._hold(LEDGER_RULE, warning)
        if self.notices is not None:
            self.notices.warning(warning, self.session.store.last_step or None)

    def _failed_deliveries(self, now: float) -> None:
        """Show a failed delivery as a warning in the panel.

        The warning stays whether the next delivery succeeds or not. It counts the failures
        and gives the newest reason.
        """
        if self.notices is None:
            return
        failures = self.notices.failures
        if len(failures) == self._failures_seen:
            return
        self._failures_seen = len(failures)
        warning = RunWarning(
            NOTIFY_RULE,
            "warn",
            now,
            f"{len(failures)} notification(s) failed; last: {failures[-1]}",
            {"failures": float(len(failures))},
        )
        self._hold(NOTIFY_RULE, warning)
        self.say(f"warn: {failures[-1]}")

    def _hold(self, rule: str, warning: RunWarning | None) -> None:
        """The panel holds `warning` as its rule's one (None: the rule's warning dropped)."""
        session = self.session
        if warning is None:
            del session.extra_warnings[rule]
        else:
            session.extra_warnings[rule] = warning
        kept = [w for w in session.warnings if w.rule != rule]
        session.warnings = session.sorted_warnings(kept if warning is None else [*kept, warning])

    # -- the end --------------------------------------------------------------------------

    def final(
        self,
        verdict: Verdict,
        text: str,
        exit_line: str,
        store: RunStore | None = None,
        posted: tuple[int, float] | None = None,
    ) -> None:
        """Post the final read, once.

        The post is recorded as sent at the `posted` step and logged time when given, else at
        the log's end. `store` is the log as the finish re-read it, which holds the end the
        session may not have followed yet.
        """
        self.finalized = True
        if self.notices is not None:
            hidden = self.hides(verdict)
            text = render_blinded(verdict, self.session.source.label) if hidden else text
            self.notices.final(verdict, text, exit_line, hidden)
            store = store if store is not None else self.session.store
            at = posted if posted is not None else _log_end(store)
            self._record_post("verdict", *at)

    def close(self, drain_s: float | None = None) -> list[str]:
        """Wait for the last deliveries, then release the lock.

        The wait lasts at most `drain_s`, else notices.DRAIN_S. Returns a line per failure not
        said yet.
        """
        lines: list[str] = []
        if self.notices is not None:
            closing = self.notices.close() if drain_s is None else self.notices.close(drain_s)
            lines = closing[self._failures_seen :]
        if self.lock is not None:
            self.lock.release()
        return lines


def _taken(lock: WatchLock, say: Callable[[str], None]) -> bool:
    """The run's babysit lock taken; False where another watcher holds it.

    A lock that cannot be taken at all is said, and the run babysat anyway.
    """
    try:
        return lock.acquire()
    except OSError as exc:
        say(f"warn: babysit lock {lock.path}: {exc.strerror or exc}; babysitting anyway")
        return True


def _log_end(store: RunStore) -> tuple[int, float]:
    """(step, logged time) of the log's end event, else its last step with no time."""
    if store.events and store.ended_at is not None:
        end = store.events[-1]
        return end.step, end.time
    return store.last_step or 0, math.nan
