"""The `--plain` output of launch, attach and replay: a run as lines of text, for a pipe.

It gives a run's records, warnings and verdict headlines as lines of text (`launch`,
`attach` and `replay` with --plain).

`PlainReport` is the line-by-line form of the console's `Session`. `launch --plain` adds the
engine. It follows until the engine exits, then the exit is recorded in the registry,
verdict.json written and the final verdict printed. Ctrl-C detaches and leaves the run going
(unless --stop-on-exit).

Its size: the report, the watch of `launch --plain` and the run's end are one output's three
moments (a line per record, the engine polled between reads, the final read), each step of
them a function of its own so that `take` and `finish` read as their sequence.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, TextIO

from fontaine_tui.core.errors import InputError

if TYPE_CHECKING:
    from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.follow.base import Batch
from fontaine_tui.core.follow.open import run_source
from fontaine_tui.core.host.telemetry import sample
from fontaine_tui.core.launch.targets.base import Handle
from fontaine_tui.core.log.records import Alert, Event, Malformed, Probe
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run.evidence import (
    READ_SHOWN,
    FolderEvidence,
    ledger_refusal,
    seen_odd_values,
    seen_probes,
    trail_refusal,
    verdict_of,
)
from fontaine_tui.core.run.exits import GATE_STOPS, ExitInfo
from fontaine_tui.core.run.launcher import process_label
from fontaine_tui.core.run.logtail import engine_status
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Registry
from fontaine_tui.core.seal.export import write_verdict
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict import blind
from fontaine_tui.core.verdict.prereg import Prereg, utc_iso
from fontaine_tui.core.verdict.record import Verdict
from fontaine_tui.core.verdict.text import headline, render, render_blinded
from fontaine_tui.core.watch.traineralerts import alert_words, rule_of
from fontaine_tui.model.attempt_end import end_attempt, final_store
from fontaine_tui.model.babysitter import Babysitter
from fontaine_tui.model.plain_warnings import PlainWarnings
from fontaine_tui.model.readout import recipe_steps
from fontaine_tui.model.recordline import describe_record
from fontaine_tui.model.recover import Restarter, recover
from fontaine_tui.model.sampler import Sampler, on_node
from fontaine_tui.model.session import Session

ENDS = ("end", "error")  # the events that end a run: finished, failed
TICK_S = 1.0  # a quiet follower: how often the rules judge the silence
DRAIN_S = 1.0  # after the engine exits, how long the follower gets to read the last lines


class PlainReport:
    """The plain-text form of a `Session`, for launch, attach and replay --plain.

    Every record, malformed line and follower note is a line, and the verdict headline
    follows each probe. What the lines mean is the session's, so the console and the plain
    report never differ.
    """

    def __init__(
        self, session: Session, out: TextIO | None = None, sampler: Sampler | None = None
    ) -> None:
        self.session = session
        self.out = out or sys.stdout
        self.steps = recipe_steps(session.preset)
        self._said: set[str] = set()  # ledger breaks and provenance changes, said once
        self._said_verdict = ""  # the last verdict line said
        self._alerts: set[str] = set()  # the trainer's alerts said (a line read again: once)
        self._odd = ""  # the eval values not numbers, as last said (the gate's words)
        self.warnings = PlainWarnings(session, self.say, sampler)
        self.babysitter: Babysitter | None = None  # launch --plain: each probe's read sent

    def watched_by(self, sitter: Babysitter) -> None:
        """Babysit the run from this report: each probe's read, and after each judging."""
        self.babysitter = self.warnings.babysitter = sitter

    def say(self, text: str) -> None:
        """One line: a newline in what it quotes (a folder's name, a note) shows as `\\n`."""
        print(literal(text), file=self.out, flush=True)

    def say_lines(self, text: str) -> None:
        """Several lines, each already one line (render, poll_text)."""
        for line in text.split("\n"):
            self.say(line)

    async def take(self, batch: Batch) -> Event | None:
        """Report one follower batch.

        Returns the run's end (an `end` or `error` event) if the batch held one, else None.
        """
        ended, ledger_read = None, False
        if batch.note:
            self.say(f"-- {literal(batch.note)}")
        for n, rec in self.session.apply_lines(batch):
            if isinstance(rec, Malformed):
                self.say(f"line {n}: malformed" + (f" ({rec.reason})" if rec.reason else ""))
                continue
            if isinstance(rec, Probe):  # amendments declared since the last probe count
                await self._say_probe(rec, read_ledger=not ledger_read)
                ledger_read = True
            elif isinstance(rec, Alert):
                self.alert(rec)
            elif text := describe_record(rec, self.steps, self.event_words):
                self.say(text)
            if (end := _run_end(rec)) is not None:
                ended = end
                self._say_end_read()
            if rec is not None:
                self._judge_as_logged(rec)
        self._say_odd_values(batch)
        return ended

    async def _say_probe(self, rec: Probe, read_ledger: bool) -> None:
        """A probe's line, then the verdict as it reads the moment the probe lands."""
        session = self.session
        if read_ledger:
            await session.read_ledger()
        latest = session.latest()
        if session.hides(latest):  # blinded: the probe's step only (verdict/blind.py)
            self.say(blind.probe_line(rec.step))
        else:
            self.say(describe_record(rec, self.steps, self.event_words) or "")
        self.say_verdict(latest)
        if self.babysitter is not None:
            self.babysitter.probe(rec.step, latest)
        for warning in (session.ledger.error, *latest.provenance_changes):
            if warning and warning not in self._said:  # a ledger break, a provenance change
                self._said.add(warning)
                self.say(f"WARNING: {literal(warning)}")

    def _say_end_read(self) -> None:
        """The verdict again at the run's end, where it changed: an early end changes the read."""
        latest = self.session.latest()
        if f"verdict: {self.headline(latest)}" != self._said_verdict:
            self.say_verdict(latest)

    def _judge_as_logged(self, rec: object) -> None:
        """The rules judge each record as it lands, as a live log, on the log's own clock.

        A backlog read at once is judged as it was written (no stall while catching up); the
        quiet between batches is judged on this one.
        """
        logged = getattr(rec, "time", math.nan)
        self.warnings.judge(now=logged if math.isfinite(logged) else None)

    def _say_odd_values(self, batch: Batch) -> None:
        """A foreign run's eval values not numbers as the gate says them, when they change.

        Counted while the read is hidden, named once it shows (read only when there are any).
        """
        session = self.session
        if (batch.odd is not None or batch.records) and seen_odd_values(session.store, True):
            odd = seen_odd_values(session.store, session.hides(session.latest()))
            if odd != self._odd:
                self._odd = odd
                self.say(f"-- {odd}")

    def say_verdict(self, v: Verdict) -> None:
        """The verdict's line, kept as the last one said."""
        self._said_verdict = f"verdict: {self.headline(v)}"
        self.say(self._said_verdict)

    def event_words(self, rec: Event) -> tuple[str, str]:
        """An event's name and detail, hidden as the probe lines while the read is."""
        return self.session.event_words(rec, self.session.hides(self.session.latest()))

    def alert(self, rec: Alert) -> None:
        """An alert the trainer raised, said once, at its level (blinded as the panel)."""
        rule = rule_of(rec)
        if rule in self._alerts:
            return
        self._alerts.add(rule)
        hidden = self.session.blind_hides(self.session.latest())
        metrics = self.session.rule_metrics()
        words = alert_words(rec, metrics, hidden, self.session.redact)
        self.say(f"{rec.level.upper():6} {words}")

    async def follow(
        self,
        until_end: bool = False,
        quiet_end: float | None = None,
        foreign: bool = False,
        final_ends: bool = True,
    ) -> int:
        """Report the source until it ends, and return the exit code.

        With `until_end`, the report goes on until the run's end event. That is the engine's,
        or that of a foreign source that knows its end (an MLflow run's status). For a
        `foreign` run whose source says no end (`final_ends`), it goes on until the final read
        (the probe at the endpoint in force, with the verdict's metric). With `quiet_end`, it
        goes on until no new record came for that many seconds.

        However it ends (the log's end, the run's end event, the quiet), the report says why
        and exits with the verdict's code, as `fontaine-tui verdict` does: a code of 0 says
        HEALTHY and nothing else. The engine's own error event exits 1 (as `launch --plain`
        exits on a failed run).
        """
        source = self.session.source
        self.say(f"following {literal(source.label)}")
        batches = _Batches(source.follow(), quiet_end)
        try:
            why = await self._report(batches, until_end, foreign, final_ends)
        finally:
            await batches.close()
            await source.close()
        if why is None:  # the engine's error: as launch --plain, a failed run
            return 1
        if refused := getattr(source, "refused", ""):  # several runs, none chosen: as `verdict`
            raise InputError(refused)
        return self._conclude(why)

    async def _report(
        self, batches: _Batches, until_end: bool, foreign: bool, final_ends: bool
    ) -> str | None:
        """Report batches until the report ends: why, in words ("" at the source's end).

        None when the engine's own error event ends it."""
        while True:
            left = batches.quiet_left()
            if left <= 0:
                return f"no new data for {batches.quiet_end:g} s (--quiet-end)"
            try:
                batch = await batches.next(min(left, TICK_S))
            except StopAsyncIteration:  # the source said its end (a replay's last line)
                return ""
            if batch is None:  # quiet: the rules judge the silence (a stall), telemetry moves
                await self.warnings.sample()
                self.warnings.judge()
                continue
            end = await self.take(batch)
            if not until_end:
                continue
            if _engine_failed(end, foreign):
                return None
            if why := self._why_ended(end, foreign and final_ends):
                return why

    def _why_ended(self, end: Event | None, final_ends: bool) -> str:
        """Why the run is over, in words, or "" while it goes on.

        Its end event; else (`final_ends`: a foreign run whose source says no end) the final
        read; else the stop a gate recorded in attempts.jsonl, for a log that never says its
        end."""
        if end is not None:
            name, said = self.event_words(end)
            return f"the run's {name} event at step {end.step}" + (f": {said}" if said else "")
        if final_ends and (read := self._final()):
            return read
        if (stop := self.session.stop_reached()) is not None:
            return f"the run's stop on its decision lock at step {stop} (attempts.jsonl)"
        return ""

    def _conclude(self, why: str) -> int:
        """Say why the report ended and the verdict; the exit code, as `verdict` gives it."""
        latest = self.session.latest()
        if why:
            self.say(f"ended: {literal(why)}")
            self.say_verdict(latest)
        elif f"verdict: {self.headline(latest)}" != self._said_verdict:
            self.say_verdict(latest)  # the read at the log's end (a stop attempts.jsonl records)
        # a chain that does not hold: exit 2 naming it, as `verdict` does (the reads above are
        # the evidence's, the amendments before a ledger's break counted)
        if refused := ledger_refusal(self.session.ledger.error):  # as `verdict`
            raise InputError(refused)
        hidden = self.session.hides(latest)
        if refused := trail_refusal(latest.review, "" if hidden else READ_SHOWN):  # as `verdict`
            raise InputError(refused)
        return blind.EXIT_BLINDED if hidden else latest.exit_code

    def headline(self, v: Verdict) -> str:
        """The verdict's one line, or the blinded one while the session hides the read."""
        return blind.blinded_headline(v) if self.session.hides(v) else headline(v)

    def _final(self) -> str:
        """The final read in words, or "" before there is one.

        The read is final once the verdict reads the endpoint in force for good and its probe
        holds the metric. A probe sent out before its writer logged the metric is not yet the
        read.
        """
        latest = self.session.latest()
        if latest.provisional:
            return ""
        shown = seen_probes(self.session.store, self.session.hides(latest))
        probe = shown.get(latest.read_step or -1)
        if (
            probe is not None
            and latest.metric not in probe.fields
            and latest.metric not in dict(probe.not_numbers)
        ):
            return ""
        return f"the final read (step {latest.read_step}, the endpoint in force)"


def _run_end(rec: object) -> Event | None:
    """The record when it is the run's end (an `end` or `error` event), else None."""
    return rec if isinstance(rec, Event) and rec.event in ENDS else None


def _engine_failed(end: Event | None, foreign: bool) -> bool:
    """The engine's own error event ended the run (as launch --plain, a failed run)."""
    return end is not None and not foreign and end.event != "end"


class _Batches:
    """A source's batches, each waited for at most a while, the read kept going in between.

    It also keeps the time of the last batch with news (lines or records), for --quiet-end."""

    def __init__(self, batches: AsyncIterator[Batch], quiet_end: float | None) -> None:
        self._batches = aiter(batches)
        self._pending: asyncio.Future[Batch] | None = None
        self._loop = asyncio.get_running_loop()
        self._news = self._loop.time()
        self.quiet_end = quiet_end

    def quiet_left(self) -> float:
        """Seconds left before the quiet ends the report (infinite without --quiet-end)."""
        if self.quiet_end is None:
            return math.inf
        return self._news + self.quiet_end - self._loop.time()

    async def next(self, wait: float) -> Batch | None:
        """The next batch, or None when none came within `wait` seconds.

        Raises StopAsyncIteration at the source's end."""
        if self._pending is None:
            self._pending = asyncio.ensure_future(anext(self._batches))
        done, _ = await asyncio.wait({self._pending}, timeout=wait)
        if not done:
            return None
        try:
            batch = self._pending.result()
        finally:
            self._pending = None
        if batch.lines or batch.records:
            self._news = self._loop.time()
        return batch

    async def close(self) -> None:
        """Stop the read in flight, if any."""
        if self._pending is not None:
            self._pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await self._pending


class PlainWatch:
    """The watch of `launch --plain`, a `PlainReport` on the launched run.

    The engine is polled and the warning rules judged between reads.
    """

    def __init__(
        self,
        preset: Preset,
        folder: RunFolder,
        engine: Handle,
        prereg: Prereg,
        out: TextIO | None = None,
        poll_s: float = 0.25,
        blind: bool = False,
    ) -> None:
        self.folder, self.engine, self.prereg = folder, engine, prereg
        self.session = Session(
            run_source(folder.root, preset.source, min(poll_s, 0.25)),
            preset,
            "launch",
            engine,
            folder.root,
        )
        self.session.blind_asked = blind  # launch --blind (core/verdict/blind.py)
        self.report = PlainReport(self.session, out)
        self.exit: ExitInfo | None = None
        self.babysitter: Babysitter | None = None  # set by babysit()
        self.attempt: int | None = None  # this start's number in attempts.jsonl
        # a watcher that keeps the preset's [recovery] (launch --plain): it starts the restart
        # and returns what watches it, or None where the start failed (said)
        self.restarter: Restarter | None = None
        self.status = ""  # what the engine last said it is doing, before its first record
        self._said_status = ""

    @property
    def preset(self) -> Preset:
        return self.session.preset

    def say(self, text: str) -> None:
        self.report.say(text)

    def say_lines(self, text: str) -> None:
        self.report.say_lines(text)

    def verdict(self, store: RunStore, ended: int | None = None) -> Verdict:
        """The read of `store` in its folder's context (core/run/evidence.py).

        That is the ledger, attempts.jsonl and the review trail; `ended`: the step a
        stop_on_lock gate stopped the run at. A break in the ledger is said; the amendments
        before it count."""
        ctx = FolderEvidence.of_folder(self.folder, self.prereg.provenance, strict=False)
        if ctx.ledger_error:
            self.say(f"WARNING: {literal(ctx.ledger_error)}")
        return verdict_of(store, self.preset, ctx, stopped_at=ended)

    def send_final(self, verdict: Verdict, text: str, info: ExitInfo, store: RunStore) -> None:
        """The babysitter's final read sent, and what it still had to say said."""
        if self.babysitter is not None:
            said, _ = self.babysitter.exit_words(info)
            self.babysitter.final(verdict, text, said, store)
            for line in self.babysitter.close():
                self.say(line)

    def look(self) -> tuple[ExitInfo | None, TelemetrySnapshot | None]:
        """The blocking part of a poll (process, NVML, /proc), run off the event loop.

        A Slurm job runs on its node: no look here, whose RAM and GPUs are not its. Until
        the first record, the engine's status line is read too (`status`)."""
        exit_info = self.engine.poll()
        if not self.session.store.records:
            self.status = engine_status(self.engine)
        if on_node(self.engine):
            return exit_info, None
        return exit_info, sample(pid=None if exit_info else self.engine.pid or None)

    async def check(self) -> ExitInfo | None:
        """Poll once, with the blocking part (`look`) in a thread and the judging here.

        The judging stays on the event loop, where the follower also writes the store. What
        the engine says it is doing before its first record is said once each time it
        changes (engine/status.py).
        """
        self.exit, telemetry = await asyncio.to_thread(self.look)
        if self.status != self._said_status and not self.session.store.records:
            self._said_status = self.status
            if self.status:
                self.say(f"engine: {self.status}")
        self.report.warnings.judge(telemetry)  # said, sent, and a due poll taken
        return self.exit

    async def follow(self, poll_s: float) -> ExitInfo:
        source = self.session.source
        await self.session.read_ledger()

        async def read() -> None:
            async for batch in source.follow():
                await self.report.take(batch)

        reader = asyncio.create_task(read())
        try:
            while (info := await self.check()) is None:
                await asyncio.sleep(poll_s)
            await asyncio.sleep(DRAIN_S)
            await self.check()  # the exit-time warnings, on the last lines
            return info
        finally:
            await source.close()
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


def finish(watch: PlainWatch, registry: Registry, host: str, info: ExitInfo) -> int:
    """Record the exit, write verdict.json, print the final read.

    The exit code is the verdict's for a run that finished its recipe or stopped on its
    locked decision, else 1."""
    folder = watch.folder
    if watch.babysitter is not None:  # a stop it made on the preset's stop_on_lock gate
        info = watch.babysitter.exit_of(info)
    store, where = final_store(folder, watch.preset, watch.say)
    last = max(info.last_step, store.last_step)
    if last > info.last_step:  # a launched [command]'s step is in its own trainer's log
        info = dataclasses.replace(info, last_step=last)
    complete = info.status == "finished" and last >= recipe_steps(watch.preset)
    _record_exit(registry, watch, host, info, complete)
    watch.say(watch.session.exit_words(info, watch.session.hides(watch.session.latest())))
    end_attempt(folder, watch.attempt, info, watch.babysitter, watch.say)
    if (restarted := recover(watch, info, store)) is not None:
        return restarted()
    verdict = watch.verdict(store, last if info.cause in GATE_STOPS else None)
    hidden = watch.session.hides(verdict)  # a run ended before its endpoint, blinded
    text = render_blinded(verdict, where) if hidden else render(verdict, where)
    watch.say_lines(text)
    watch.send_final(verdict, text, info, store)
    if hidden:  # the file would hold the hidden read for the next reader of the folder
        watch.say(
            "verdict.json not written: the read is blinded until the endpoint "
            f"({blind.unblind_hint(str(folder.root))})"
        )
    else:
        _write_verdict(watch, verdict)
    return _exit_code(verdict, info, complete, hidden)


def _record_exit(
    registry: Registry, watch: PlainWatch, host: str, info: ExitInfo, complete: bool
) -> None:
    """The exit in the registry: a run that finished short of its recipe as `exited`."""
    status = info.status if complete or info.status != "finished" else "exited"
    try:
        registry.update(
            watch.folder.root,
            host,
            status=status,
            exit_code=info.code,
            last_step=info.last_step,
            updated_at=utc_iso(time.time()),
        )
    except Exception as exc:  # the run's outcome is still printed and written below
        watch.say(f"warn: exit not recorded in the registry ({exc})")


def _write_verdict(watch: PlainWatch, verdict: Verdict) -> None:
    """verdict.json written, or a warning line saying why not."""
    try:
        write_verdict(watch.folder.verdict, verdict)
    except (InputError, OSError) as exc:
        watch.say(f"warn: verdict.json not written ({exc})")
    else:
        watch.say(f"verdict.json written to {watch.folder.verdict}")


def _exit_code(verdict: Verdict, info: ExitInfo, complete: bool, hidden: bool) -> int:
    """The verdict's code (blinded: its own) for a run that finished or stopped locked, else 1."""
    if hidden:
        return blind.EXIT_BLINDED if complete else 1
    locked = info.cause == "decision-locked" and not verdict.provisional
    return verdict.exit_code if complete or locked else 1


def babysit(
    preset: Preset,
    folder: RunFolder,
    engine: Handle,
    registry: Registry,
    host: str,
    prereg: Prereg,
    poll_s: float,
    stop_on_exit: bool,
    attempt: int | None = None,
    blind: bool = False,
    restarter: Restarter | None = None,
    said: tuple[str, ...] = (),
    taken: Callable[[], None] | None = None,
) -> int:
    """Watch the launched engine until it exits.

    Ctrl-C, SIGTERM and SIGHUP (a closed terminal, a job scheduler's kill) are one thing.
    With `stop_on_exit` the engine is stopped and its exit recorded. Without it, the console
    detaches and says how to come back. `said`: the launch checks' lines already said (what
    they say of the GPUs is not said again in full: model/plain_warnings.py). `taken` is called
    as the follow begins, from when a Ctrl-C is this watch's.
    """
    watch = PlainWatch(preset, folder, engine, prereg, poll_s=poll_s, blind=blind)
    watch.attempt, watch.restarter = attempt, restarter
    sitter = Babysitter.for_session(
        watch.session, "launch --plain", host, watch.say, since=time.time() - 1.0
    )  # earlier attempts' polls: not this one's
    watch.babysitter = sitter
    watch.report.watched_by(sitter)
    watch.report.warnings.said.extend(said)
    sitter.launched(preset.name, str(folder.root), process_label(engine), prereg.preset_sha256)
    old = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        if taken is not None:
            taken()
        info = asyncio.run(watch.follow(poll_s))
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, Signalled) else signal.SIGINT
        name = signal.Signals(signum).name
        if not stop_on_exit:
            _detached(watch, sitter, name)
            return 128 + signum
        _say(
            watch, f"{name}: stopping {process_label(engine)} (SIGINT, then SIGTERM, then SIGKILL)"
        )
        info = engine.stop()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return finish(watch, registry, host, info)


class Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP, taken the way Ctrl-C is."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _interrupt(signum: int, frame: object) -> None:
    raise Signalled(signum)


def _detached(watch: PlainWatch, sitter: Babysitter, name: str) -> None:
    """Say the run goes on without this watch, and how to come back to it or stop it."""
    root = watch.folder.root
    _say(watch, f"detached ({name}): {process_label(watch.engine)} keeps running in {root}")
    _say(watch, f"  watch it again: fontaine-tui attach {root}")
    _say(watch, f"  stop it (checkpoints first): fontaine-tui stop {root}")
    for line in sitter.close():  # what is queued goes out (at most notices.DRAIN_S)
        _say(watch, line)


def _say(watch: PlainWatch, text: str) -> None:
    try:
        watch.say(text)
    except OSError:  # the terminal went away with the SIGHUP: the registry still learns
        pass
