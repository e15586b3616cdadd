"""The console: modes, bindings, app-wide reactives and the workers that feed them.

It turns the model's results (`Outcome`) into notifications and screens; what they say is
decided in the model.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.reactive import var
from textual.screen import Screen
from textual.timer import Timer
from textual.worker import Worker, WorkerState

from fontaine_tui import palette
from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.runs.fleet import Fleet
from fontaine_tui.model.babysitter import Babysitter
from fontaine_tui.model.launched import LaunchEnd
from fontaine_tui.model.overlay import Overlay
from fontaine_tui.model.processes import who_of
from fontaine_tui.model.runs import RegistryReader, RunEntry, RunsList, open_run, open_target
from fontaine_tui.model.sampler import Sampler, take_sample
from fontaine_tui.model.session import Process, Session
from fontaine_tui.model.view import Outcome, RunView, step_read
from fontaine_tui.screens.dialogs import ConfirmDialog, NoteDialog, QuitDialog
from fontaine_tui.screens.help import HelpScreen
from fontaine_tui.screens.modes import MODE_BINDINGS
from fontaine_tui.screens.modes import MODES as SCREEN_MODES
from fontaine_tui.widgets.safe import notify

FRAME_S = 0.5  # at most two redraws a second, however fast lines arrive
CHART_S = 2.0  # the loss chart: at most one plotext rebuild per this many seconds
TELEMETRY_S = 5.0  # GPU, RAM and engine RSS move slowly; each sample also repaints a panel
POLL_S = 1.0
BABYSIT_S = 5.0  # the babysitter's check (warnings, polls, notifications) with no new lines
QUIT_DRAIN_S = 2.0  # how long quitting waits for notifications still queued
WARM_S = 0.05  # between two modes composed ahead of their first key (_warm_modes)


class FontaineApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "fontaine-tui"
    MODES = dict(SCREEN_MODES)
    BINDINGS = [
        *MODE_BINDINGS,
        Binding(
            "question_mark",
            "help",
            "Help",
            key_display="?",
            id="app.help",
            tooltip="List every key binding",
        ),
        Binding(
            "q",
            "quit",
            "Quit",
            id="app.quit",
            tooltip="Quit; with a launched run alive, asks: stop it or detach",
        ),
    ]

    # App-wide state, watched by the screens; `var`: setting one repaints nothing by itself.
    view: var[RunView | None] = var(None, always_update=True, init=False)
    scaled: var[bool] = var(False)
    read_step: var[int | None] = var(None)
    telemetry_snapshot: var[TelemetrySnapshot | None] = var(None, always_update=True)
    tail_total: var[int] = var(0)
    review_status: var[str] = var("")

    def __init__(
        self,
        session: Session,
        *,
        telemetry: Sampler | None = None,
        clock: Callable[[], float] = time.time,
        registry: RegistryReader | None = None,
        start_mode: str = "monitor",
        frame_s: float | None = None,  # None: FRAME_S
        chart_s: float | None = None,  # None: CHART_S
        babysit_host: str | None = None,
        fleet: Fleet | None = None,
        ssh_options: tuple[str, ...] = (),
        launched: LaunchEnd | None = None,
        announce: tuple[str, str, str] | None = None,
    ) -> None:
        super().__init__()
        # the launch's end, done when the engine is seen to exit (model/launched.py)
        self.launched = launched
        self._launch_end = launched  # kept while its finish runs: a quit cancels a restart due
        self._given_process = session.process
        # the launch this console was opened for: its engine stays watched (its end finished
        # by `launched`) and its babysitter kept for that end, whatever run the console shows
        self.launch_session: Session | None = session if session.kind == "launch" else None
        self.launch_babysitter: Babysitter | None = None
        self.announce = announce  # (folder, what, prereg sha256): the launch post, sent once
        self.babysit_host = babysit_host  # set: this console babysits what it shows
        self.babysitter: Babysitter | None = None
        self.chart_s = CHART_S if chart_s is None else chart_s
        self.session = session
        self.telemetry = telemetry
        self.telemetry_reason = (
            ""
            if telemetry
            else ("replay: no live machine" if session.kind == "replay" else "no sampler given")
        )
        self.clock = clock
        self.registry = registry
        # the viewer's --blind hides the runs' reads there too (whichever run is shown)
        self.runs = RunsList(registry, fleet=fleet, blind=lambda: self.session.blind_asked)
        self.ssh_options = ssh_options
        self.overlay = Overlay()  # the runs pinned in the runs mode, overlaid in its own
        self.registry_reason = "no registry given"
        self.start_mode = start_mode
        self.frame_s = FRAME_S if frame_s is None else frame_s
        self.frames = 0
        self._frame_timer: Timer | None = None
        self._probes_seen = 0
        self._offered = False
        self._blinded = False  # the unblind key shows only while the read is hidden
        self.modes_warm = False  # every mode composed ahead of its first key (_warm_modes)

    # -- lifecycle -------------------------------------------------------------------------

    def on_mount(self) -> None:
        self.start_babysitting()
        self.view = self.session.view()
        self.refresh_ledger()
        self.switch_mode(self.start_mode)
        self.start_following()
        self.set_timer(WARM_S, self._warm_modes)
        if self.session.process is not None:
            self.set_interval(POLL_S, self._poll_process)
        if self.telemetry is not None:
            self.sample_telemetry()
            self.set_interval(TELEMETRY_S, self.sample_telemetry)
        if self.babysit_host is not None:
            self.set_interval(BABYSIT_S, self._babysit)

    def _warm_modes(self) -> None:
        """Compose one mode not yet shown, then the next after a pause, until all are.

        A mode's first key otherwise composes its screen (each new widget kind bringing its
        CSS): a few hundred milliseconds before the first frame, on every mode's first key.
        Composed here, in the background, one at a time so keys and frames go on between
        them, the first key only restyles the screen, as Textual does once a mode."""
        if not self.is_running or self._exit:  # closing: no new screens
            return
        cold = [mode for mode in self._modes if mode not in self._screen_stacks]
        if cold:
            # composed only: restyling a screen not shown here left the current one's
            # header unpainted at times (a real terminal); its first key restyles it
            self._init_mode(cold[0])
            self.set_timer(WARM_S, self._warm_modes)
        else:
            self.modes_warm = True

    def _let_go(self, session: Session) -> None:
        """Close the remote engine of a run picked from the runs list, as the console leaves it.

        Only a far run's handle is let go: its connection is closed, and an exit it saw (a
        stop sent from here) is written into the registry. The engine given by the command
        (launch --on, attach) is the command's to close.
        """
        engine = session.process
        if engine is None or not engine.remote or engine is self._given_process:
            return
        registry = self.registry if hasattr(self.registry, "update") else None
        engine.release(registry)

    async def on_unmount(self) -> None:
        if self._launch_end is not None:  # a restart in its backoff is not made: none to watch
            self._launch_end.closing.set()
        self._let_go(self.session)
        await self.session.source.close()
        await self.overlay.close()
        if self.babysitter is not None and self.session.kind != "launch":
            # a launch's: its finish closes it; a console quits in at most QUIT_DRAIN_S
            await asyncio.to_thread(self.babysitter.close, QUIT_DRAIN_S)

    def start_babysitting(self) -> None:
        if self.babysit_host is None or self.session.kind == "replay":
            return

        def say(text: str) -> None:
            self.session.note = text

        launch = self.session.kind == "launch"  # a launch's polls begin with this attempt
        self.babysitter = Babysitter.for_session(
            self.session,
            "console",
            self.babysit_host,
            say,
            clock=self.clock,
            auto_final=not launch,
            since=self.clock() - 1.0 if launch else None,
        )
        if launch and self.session is self.launch_session:
            self.launch_babysitter = self.babysitter
            if self.launched is not None:  # the run's end sends this watcher's final read
                self.launched.watched_by(self.babysitter)
        if self.announce is not None:
            self.babysitter.launched(self.session.given_preset.name, *self.announce)
            self.announce = None

    def _babysit(self) -> None:
        """Judge, poll and post about the run between frames too, so a quiet run is still seen.

        Sending only queues (the notifier's threads deliver), so a dead endpoint costs nothing
        here.
        """
        if self.babysitter is None:
            return
        now = self.clock()
        self.session.update_warnings(self.telemetry_snapshot, now)
        self.babysitter.tick(self.telemetry_snapshot, now)
        self.schedule_frame()

    def start_following(self) -> None:
        self.follow_log()
        self.follow_tail()

    @work(exclusive=True, group="follow")
    async def follow_log(self) -> None:
        session = self.session  # a batch in flight never lands in a session attached later
        async for batch in session.source.follow():
            if session.apply(batch) and session is self.session:
                self.schedule_frame()

    @work(exclusive=True, group="tail")
    async def follow_tail(self) -> None:
        session = self.session
        async for batch in session.source.follow("engine.out.log"):
            if session.apply_tail(batch) and session is self.session:
                self.tail_total = session.tail_total

    @work(exclusive=True, group="ledger")
    async def refresh_ledger(self) -> None:
        """Re-read prereg.json and the amendment ledger (at start, and at each new probe)."""
        await self.session.read_ledger()
        self.schedule_frame()

    @property
    def frame_pending(self) -> bool:
        return self._frame_timer is not None

    def schedule_frame(self) -> None:
        """Coalesce every batch that lands within one frame into one redraw."""
        if self._frame_timer is None:
            self._frame_timer = self.set_timer(self.frame_s, self._frame)

    def _frame(self) -> None:
        self._frame_timer = None
        self.frames += 1
        self.session.update_warnings(self.telemetry_snapshot, self.clock())
        if self.babysitter is not None:
            self.babysitter.tick(self.telemetry_snapshot, self.clock())
        probes = self.session.store.probes_version
        if probes != self._probes_seen:  # a new probe: an amendment may have been declared
            self._probes_seen = probes
            self.refresh_ledger()
        self.view = self.session.view()

    def _poll_process(self) -> None:
        session = self.launch_session or self.session
        if session.poll_engine_status() and session is self.session:  # before the first record
            self.schedule_frame()
        if session.poll_process():
            if session is self.session:
                notify(
                    self,
                    f"{who_of(self.session)} {self.session.view().status}",
                    severity="warning",
                )
                self.schedule_frame()
            if self.launched is not None and session.kind == "launch":
                self._finish_run()

    @work(exclusive=True, group="finish")
    async def _finish_run(self) -> None:
        """End the run now that the launched engine has exited, off the event loop.

        The run's end writes the registry, the attempt, the incident and verdict.json, and
        sends the verdict post. It uses the launch's babysitter, which ticks no more (the
        finish closes it).
        """
        launched, sitter = self.launched, self.launch_babysitter
        if launched is None:
            return
        self.launched = None
        if self.babysitter is sitter:
            self.babysitter = None
        self.launch_babysitter = None
        if not await asyncio.to_thread(launched.finish_seen, True):  # restarted ([recovery])
            session = self.launch_session or self.session
            session.process, session.exit_code = launched.handle, None
            self.launched = launched
            self.start_babysitting()  # the new attempt's watcher, as at the launch
            self.session.note = launched.restarted
            self.schedule_frame()
            return
        self.session.note = "run ended: registry, attempts.jsonl and verdict.json written"
        self.schedule_frame()

    @work(exclusive=True, group="telemetry")
    async def sample_telemetry(self) -> None:
        fn = self.telemetry
        if fn is None:
            return
        self.telemetry_snapshot = await take_sample(fn)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every worker failure lands here: shown, never a traceback over the screen."""
        if event.state == WorkerState.ERROR:
            err = event.worker.error
            msg = f"{event.worker.group}: {type(err).__name__}: {err}"
            self.session.note = msg
            notify(self, msg, severity="error", timeout=10)
            self.schedule_frame()

    # -- actions -------------------------------------------------------------------------

    def action_toggle_scale(self) -> None:
        self.scaled = not self.scaled

    def action_step_read(self, delta: int) -> None:
        if self.view is not None:
            self.read_step = step_read(self.view, self.read_step, delta)

    def action_live_read(self) -> None:
        self.read_step = None

    def tell(self, outcome: Outcome, timeout: float = 5) -> str:
        notify(self, outcome.message, severity=outcome.severity, timeout=timeout)
        return outcome.message

    def action_review(self, action: str, note: str = "") -> None:
        """Append a review line, once confirmed: a keystroke alone never writes one.

        A note is confirmed by its dialog's enter; accept and flag ask y/n first. A review
        that cannot be appended (a blinded read, no run folder) is said at once."""
        view, step = self.view, self.read_step  # the read shown now, whatever lands meanwhile
        if view is None:
            return
        refused = self.session.review_refused(view, action)
        if refused is not None or action == "note":
            self.review_status = self.tell(
                refused or self.session.review(view, step, action, note, self.clock)
            )
            self.schedule_frame()  # the trail's state beside the verdict
            return
        session = self.session

        def done(yes: bool | None) -> None:
            if session is not self.session:  # another run was picked meanwhile
                outcome = Outcome(f"{action}: not appended, another run is shown now", "warning")
            elif yes:
                outcome = session.review(view, step, action, note, self.clock)
            else:
                outcome = Outcome(f"{action}: cancelled, nothing appended", "information")
            self.review_status = self.tell(outcome, timeout=8)
            self.schedule_frame()

        self.push_screen(
            ConfirmDialog(
                self.session.review_question(view, step, action),
                (
                    "The demo's trail is in its temporary copy, removed on quit; in a real run "
                    "a line cannot be taken back (the trail is hash-chained). "
                    if self.session.export_folder is not None
                    else "A review line is kept for good: the trail is hash-chained and a line "
                    "cannot be taken back. "
                )
                + "y appends; n or escape cancels.",
            ),
            done,
        )

    def action_note(self) -> None:
        def done(text: str | None) -> None:
            if text:
                self.action_review("note", text)

        self.push_screen(NoteDialog(), done)

    def action_unblind(self) -> None:
        """Ask why, then show the blinded read (a review.jsonl line names who and why)."""
        if self.view is None or not self.view.blinded:
            self.notify("nothing is blinded", timeout=3)
            return

        def done(why: str | None) -> None:
            if why and self.view is not None:
                self.review_status = self.tell(self.session.unblind(self.view, why, self.clock))
                self.schedule_frame()

        self.push_screen(
            NoteDialog(
                "Unblind before the endpoint: why? (recorded in review.jsonl with your name; "
                "enter unblinds, escape cancels)",
                "the reason you need to see the read now",
            ),
            done,
        )

    @work(exclusive=True, group="export")
    async def action_export(self) -> None:
        if self.view is not None:
            outcome = await asyncio.to_thread(
                self.session.export, self.view, self.read_step, self.scaled
            )
            self.review_status = self.tell(outcome, timeout=8)

    def watch_view(self, view: RunView | None) -> None:
        offered = view is not None and view.score_offer is not None
        blinded = view is not None and view.blinded
        if (offered, blinded) != (self._offered, self._blinded):  # keys shown while they apply
            self._offered, self._blinded = offered, blinded
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "unblind":
            return self._blinded
        return self._offered if action == "rescore" else True

    @work(group="rescore")
    async def action_rescore(self) -> None:
        """The disambiguating re-score: a subprocess, awaited without blocking the UI."""
        self.tell(await self.session.rescore(self.schedule_frame), timeout=8)
        self.schedule_frame()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    async def action_quit(self) -> None:
        process = self.session.process
        if process is None or not self.session.process_alive:
            self.exit(0)
            return

        def done(choice: str | None) -> None:
            if choice == "stop":
                self.session.note = "stopping the run: SIGINT, then SIGTERM, then SIGKILL"
                self.schedule_frame()
                self._stop_run(process)
            elif choice == "detach":
                self.exit(0, message="detached; the run keeps going (see `fontaine-tui runs`)")

        self.push_screen(QuitDialog(process.pid, getattr(process, "label", None)), done)

    @work(exclusive=True, group="stop")
    async def _stop_run(self, process: Process) -> None:
        """Run the stop sequence off the event loop (over SSH it may take minutes).

        A stop that fails is shown, and the console stays.
        """
        from fontaine_tui.core.errors import InputError

        try:
            await asyncio.to_thread(process.stop)
        except (InputError, OSError) as exc:
            self.session.note = f"stop failed: {exc}"
            notify(self, f"stop failed: {exc}", severity="error", timeout=15)
            return
        self.exit(0, message="stopped the run")

    def attach_folder(self, folder: str) -> None:
        """Point the console at another run folder (from the runs list)."""
        session, why = open_run(self.session, Path(folder), self.registry)
        if why is not None:
            self.tell(why)
        self._swap(session)

    def attach_target(self, target: str) -> None:
        """Point the console at a runs-list row: a folder here, or host:folder.

        A host:folder row is followed over SSH, its prereg.json read through the connection,
        as `attach host:/path` does.
        """
        from fontaine_tui.core.follow.target import parse_follow_target
        from fontaine_tui.core.ssh.destination import SshTarget

        parsed = parse_follow_target(target)
        if not isinstance(parsed, SshTarget):
            self.attach_folder(str(parsed.folder))
            return
        from fontaine_tui.core.runs.registry import Registry
        from fontaine_tui.model.launched import LaunchedRun

        # a run launched there from here: its engine, so quitting can stop it (over SSH)
        launched = LaunchedRun.from_other_host(
            parsed.registry_host,
            parsed.path,
            self.ssh_options,
            Registry(getattr(self.registry, "path", None)),
        )
        process = launched.handle if launched is not None else None
        self._swap(open_target(self.session, target, None, self.ssh_options, process)[0])

    def _swap(self, session: Session) -> None:
        old, self.session = self.session, session
        self.run_worker(old.source.close(), group="close")
        if old.kind == "attach":  # a remote engine polled from here: close it
            self.run_worker(asyncio.to_thread(self._let_go, old), group="close")
        if self.babysitter is not None and self.babysitter is not self.launch_babysitter:
            self.run_worker(asyncio.to_thread(self.babysitter.close, QUIT_DRAIN_S), group="close")
        self.babysitter = None  # a launch's is kept for its end (launch_babysitter)
        self.start_babysitting()
        self.refresh_ledger()
        self.read_step, self.tail_total = None, 0
        self.view = self.session.view()
        self.start_following()
        self.switch_mode("monitor")

    def registry_entries(self) -> list[RunEntry]:
        rows, self.registry_reason = self.runs.rows()
        return rows

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        modes = [s for s in self.MODES.values() if isinstance(s, type)]
        yield from palette.commands(self, modes, screen)
