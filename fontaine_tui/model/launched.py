"""A launched run, from its launch to its end.

This is the one home for what `launch`, the launch console, `launch --plain`, `stop`,
`attach` and `babysit` do with a run they started or find again in the registry.

`LaunchedRun.launch` is the one sequence, the same for every target (core/launch/targets/).
It runs the guards, freezes prereg.json, starts the run (a [command] started here under its
exit note, the telemetry recorder beside it), records the attempt in attempts.jsonl and
writes the registry entry with the target's kind. `from_registry` finds a registered run's
process again (`stop`, `babysit`) by that kind, and `from_other_host` a run launched on
another host (`attach HOST:PATH`, the runs list). What `doctor` checks before a start is
model/preflight.py's.
`finish` is the run's end once its process exited. It writes the registry, the attempt's end
and its incident post, verdict.json and the final read. The console calls it (through
`LaunchEnd`) the moment it sees the exit, and `after_console` prints what it said once the
console closed.
"""

from __future__ import annotations

import io
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from fontaine_tui.core import exitnote
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host import recorder
from fontaine_tui.core.launch import guards
from fontaine_tui.core.launch.makers import ArgvMaker, maker_for
from fontaine_tui.core.launch.targets.base import Handle, Request, Started, Target
from fontaine_tui.core.launch.targets.pick import reopen, reopen_there
from fontaine_tui.core.log.formats import kept
from fontaine_tui.core.preset.record import Preset, launchable
from fontaine_tui.core.run import attempts
from fontaine_tui.core.run.endpoint import resume_endpoint
from fontaine_tui.core.run.exits import ExitInfo
from fontaine_tui.core.run.launcher import process_label
from fontaine_tui.core.run.recovery import Restart
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.verdict.blindwords import rule_metrics
from fontaine_tui.core.verdict.ledger import declare_deltas, forget_deltas
from fontaine_tui.core.verdict.prereg import Prereg, freeze, read_prereg, unfreeze, utc_iso
from fontaine_tui.model.babysitter import Babysitter
from fontaine_tui.model.notices import RunNotices
from fontaine_tui.model.plain import PlainWatch, babysit, finish
from fontaine_tui.model.recover import Restarter

if TYPE_CHECKING:
    from fontaine_tui.core.run.attempts import Attempt

__all__ = ["Interrupted", "LaunchEnd", "LaunchedRun", "launchable"]

Findings = list[guards.Finding]  # the launch checks' findings, in their order


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C between a start and its registration: the run started, not yet returned."""

    def __init__(self, run: LaunchedRun) -> None:
        super().__init__()
        self.run = run


class LaunchEnd(Protocol):
    """What the console of a launch holds of the run.

    It holds the watcher it babysits with, and the run's end, done once (from a worker thread)
    when it sees the process exit.
    """

    def watched_by(self, babysitter: Babysitter) -> None: ...

    def finish_seen(self, restart: bool = False) -> bool: ...

    handle: Handle
    restarted: str
    closing: threading.Event  # set as the console closes: a restart in its backoff is not made


def _warn(text: str) -> None:
    print(text, file=sys.stderr)


def _checked(target: Target, req: Request, folder: RunFolder) -> tuple[Findings, tuple[str, ...]]:
    """The launch checks: (their findings, the warn and info lines said); a refusal raises."""
    findings = target.check(req, folder)
    if (why := guards.refusal(findings)) is not None:
        for line in guards.delta_lines(findings):  # a key differing: key, ours, theirs
            _warn(line)
        raise InputError(why)  # one line, exit 2, nothing written
    said: list[str] = []
    for f in findings:
        if f.level in ("warn", "info"):
            _warn(f"{f.level}: {f.message}")
            said.append(f.message)
    return findings, tuple(said)


def _frozen(
    target: Target, req: Request, folder: RunFolder, maker: ArgvMaker, findings: Findings
) -> tuple[list[str], Prereg]:
    """The argv, the folder prepared, prereg.json frozen (or read back), the deltas declared."""
    preset, resume = req.preset, req.resume
    # a resume trains to the endpoint in force, read from the ledger the verdict reads
    endpoint = resume_endpoint(folder) if resume else None
    argv = maker.argv(preset, folder.root, resume, endpoint)
    if resume:  # the trainer may write its log again from the checkpoint: keep what it holds
        kept.before_resume(folder.root)
    where = target.prepare(req, folder, argv)
    if resume:
        return argv, read_prereg(folder)
    provenance = {**maker.provenance(preset, folder.root, argv), **where}
    prereg = freeze(folder, preset, argv, target.host, provenance=provenance)
    if deltas := guards.declared(findings):
        declare_deltas(folder, preset, deltas)
    return argv, prereg


def _unlaunched(target: Target, folder: RunFolder, resume: bool, findings: Findings) -> None:
    """A start refused: nothing ran, so a fresh launch's prereg.json and deltas are taken back."""
    if not resume:  # nothing ran: the folder is not a launched run
        unfreeze(folder)
        if guards.declared(findings):  # the ledger of declared deltas written above
            forget_deltas(folder)
    target.abandon(folder)


def _record_history(maker: ArgvMaker, preset: Preset, here: RunFolder, started: Started) -> None:
    """The telemetry recorder spawned beside a run started here; none is said by the panel."""
    run_env = maker.env(preset, here.root)  # the GPUs the run sees
    try:
        recorder.spawn(here.root, started.pid, started.pid_started, run_env)
    except OSError:
        pass  # no history: the panel says the sidecar is missing


def _started(
    target: Target,
    req: Request,
    folder: RunFolder | None,
    argv: list[str],
    maker: ArgvMaker,
    findings: Findings,
) -> Started:
    """The run started by its target; a refused start takes the launch back (`_unlaunched`).

    A process started here, whatever the target, runs a [command] under its exit note (its exit
    known after a detach too), and the telemetry recorder writes its history beside it.
    """
    here = folder if target.starts_here else None
    try:
        if here is None:  # started elsewhere: its target watches its exit
            return target.start(req, folder, argv, maker)
        record = recorder.recorder_on()  # checked before any start
        noted = req.preset.command is not None
        run_argv = exitnote.wrapped(argv, here.root) if noted else argv
        started = target.start(req, folder, run_argv, maker)
    except InputError:
        if folder is not None:
            _unlaunched(target, folder, req.resume, findings)
        raise
    if record:
        _record_history(maker, req.preset, here, started)
    if noted:
        started.handle.who = "command"  # its exit read from the note (core/exitnote.py)
    return started


@dataclass(eq=False)
class LaunchedRun:
    """A run this program started (or found again by its registry entry), with what its end needs.

    `folder` is None for a run on another host (its files are read over SSH).
    """

    handle: Handle
    registry: Registry
    host: str  # the registry's key with run_dir: this host, or the far host of launch --on
    run_dir: str
    folder: RunFolder | None = None
    preset: Preset | None = None
    prereg: Prereg | None = None
    attempt: int | None = None  # this start's number in attempts.jsonl
    opened: Attempt | None = None  # from_registry: the open attempt it was found by
    target: Target | None = None
    started: Started | None = None
    babysitter: Babysitter | None = None  # the watcher whose final read the end sends
    out: io.StringIO = field(default_factory=io.StringIO)  # finish_seen's lines, kept
    code: int | None = None  # the end's exit code, once finished
    blind: bool = False  # launch --blind: the watchers hide the read (core/verdict/blind.py)
    restarted: str = ""  # the console's last finish: the restart [recovery] made, in words
    # how a restart [recovery] makes is started where the run is watched (model/restarts.py)
    restarter: Restarter | None = None
    checks_said: tuple[str, ...] = ()  # the launch checks' lines said at launch (warn, info)
    closing: threading.Event = field(default_factory=threading.Event)  # as LaunchEnd's
    # a watcher (the console, launch --plain's follower) or --detach has the run: a Ctrl-C
    # from then on is theirs; before, it stops the run (`interrupted`)
    taken: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- the launch ---------------------------------------------------------------------

    @classmethod
    def launch(
        cls,
        target: Target,
        preset: Preset,
        *,
        output_dir: str | None = None,
        resume: bool = False,
        yes_ram: bool = False,
        poll_s: float = 2.0,
        registry: Registry | None = None,
        maker: ArgvMaker | None = None,
        declared: tuple[str, ...] = (),
        restart: Restart | None = None,
    ) -> LaunchedRun:
        """Launch a run: guards, freeze, start, attempt, register.

        A refusal raises InputError (one line, nothing written). A registry or attempts.jsonl
        that cannot take the run gives a warning. `restart`: a resume the preset's [recovery]
        makes, recorded with its attempt.
        """
        registry = registry if registry is not None else Registry()
        if not target.remote:  # a far host refuses with its own words
            launchable(preset)
        if declared and target.remote:
            raise InputError("--declare-delta: not with --on (the far host's launch guards it)")
        req = Request(preset, registry, output_dir, resume, yes_ram, poll_s, declared)
        maker = maker if maker is not None else maker_for(preset)
        folder = target.folder(req)
        argv: list[str] = []
        prereg: Prereg | None = None
        said: tuple[str, ...] = ()
        findings: Findings = []
        if folder is not None:
            findings, said = _checked(target, req, folder)
            argv, prereg = _frozen(target, req, folder, maker, findings)
        started = _started(target, req, folder, argv, maker, findings)
        prereg = prereg if prereg is not None else started.prereg
        assert prereg is not None  # frozen here, or read back from the far host
        preset = prereg.read_with(preset)  # its log where the launch put it ({output_dir})
        run = cls(
            started.handle,
            registry,
            target.host,
            started.run_dir,
            folder,
            preset,
            prereg,
            target=target,
            started=started,
            checks_said=said,
        )
        run._enrol("resume" if resume else "launch", restart, poll_s)
        return run

    def _enrol(self, kind: str, restart: Restart | None, poll_s: float) -> None:
        """The started run's attempt (a run folder here) and registry entry; Ctrl-C: Interrupted."""
        try:
            if self.folder is not None:
                self.attempt = self.record_attempt(kind, restart)
            self.register(poll_s)
        except KeyboardInterrupt:  # started: the caller stops it (`interrupted`)
            raise Interrupted(self) from None

    def record_attempt(self, kind: str, restart: Restart | None = None) -> int | None:
        """This start as an attempt in attempts.jsonl; None (said) when it cannot be written."""
        assert self.folder is not None
        again = None if restart is None else (restart.number, restart.of, restart.cause)
        try:
            begun = cast("attempts.Begun", self.handle)  # a process or job started from here
            return attempts.begin(self.folder, kind, begun, self.host, restart=again)
        except OSError as exc:
            _warn(f"warn: {self.folder.attempts}: attempt not recorded ({exc.strerror or exc})")
            return None

    def register(self, poll_s: float) -> None:
        """The run into the registry, as running; a failure is one warning line."""
        assert self.target is not None and self.started is not None
        assert self.preset is not None and self.prereg is not None
        started = self.started
        entry = Entry(
            name=self.preset.run_name,
            run_dir=started.run_dir,
            host=self.host,
            preset=self.preset.name,
            preset_sha256=self.prereg.preset_sha256,
            pid=started.pid,
            pid_started=started.pid_started,
            launched_at=self.prereg.launched_at,
            status="running",
            last_step=0,
            poll_cadence_s=poll_s,
            updated_at=utc_iso(time.time()),
            job=started.job,
            target=self.target.kind,
        )
        try:
            if (why := self.target.unregistered(started)) is not None:
                raise InputError(why)
            self.registry.upsert(entry)
        except (InputError, OSError) as exc:
            _warn(f"warn: run not registered ({exc})")

    # -- what is said of it -------------------------------------------------------------

    @property
    def sha(self) -> str:
        return self.prereg.preset_sha256 if self.prereg is not None else ""

    def said(self, resume: bool) -> str:
        """The launch's one line."""
        assert self.target is not None and self.started is not None and self.preset
        req = Request(self.preset, self.registry, resume=resume)
        launched_at = self.prereg.launched_at if self.prereg is not None else ""
        return self.target.said(req, self.started, self.sha, launched_at)

    @property
    def where(self) -> tuple[str, str]:
        """(folder, process) as the launch post names them."""
        if self.target is not None and self.started is not None:
            return self.target.where(self.started)
        return self.run_dir, process_label(self.handle)

    @property
    def announcement(self) -> tuple[str, str, str]:
        """The launch post: (folder, process, prereg sha256)."""
        return (*self.where, self.sha)

    def hint(self) -> str:
        assert self.target is not None and self.started is not None
        return self.target.hint(self.started)

    def as_json(self) -> dict[str, object]:
        """launch --detach --json: the launched run as one JSON object."""
        doc: dict[str, object] = {"run_dir": self.run_dir, "pid": self.handle.pid}
        job = self.started.job if self.started is not None else ""
        if job:
            doc["job"] = job
        else:
            doc["pid_started"] = getattr(self.handle, "started", None)
        return {
            **doc,
            "host": self.host,
            "attempt": self.attempt,
            "preset_sha256": self.sha,
            "launched_at": self.prereg.launched_at if self.prereg is not None else "",
        }

    def announce(self) -> None:
        """Send the launch post of a run nobody watches from here (--detach).

        The post is sent, then waited for (at most notices.DRAIN_S). A failure is one line on
        stderr.
        """
        assert self.preset is not None
        notices = RunNotices.configured(self.preset.run_name, _warn, self.preset)
        if notices is not None:
            notices.launched(self.preset.name, *self.announcement)
            for line in notices.close():
                _warn(line)

    # -- found again --------------------------------------------------------------------

    @classmethod
    def from_registry(
        cls,
        entry: Entry,
        registry: Registry,
        this_host: str,
        *,
        ssh_options: Sequence[str] = (),
        poll_s: float | None = None,
    ) -> LaunchedRun:
        """A registered run's process, found again.

        On this host it is found by its open attempt (its offsets and OOM-kill counters) where
        the registry agrees on its pid and start time, else by the registry's pid or Slurm job.
        On another host it is held over SSH (InputError for a run only attached there).
        """
        handle, opened = reopen(entry, this_host, ssh_options, poll_s)
        if entry.host != this_host:  # its files are read over SSH
            return cls(handle, registry, entry.host, entry.run_dir)
        folder = RunFolder(Path(entry.run_dir))
        return cls(
            handle,
            registry,
            entry.host,
            entry.run_dir,
            folder,
            attempt=opened.number if opened is not None else None,
            opened=opened,
        )

    @classmethod
    def from_other_host(
        cls,
        host: str,
        run_dir: str,
        ssh_options: Sequence[str] = (),
        registry: Registry | None = None,
    ) -> LaunchedRun | None:
        """A run this host launched on `host` (`launch --on`), or None for anything else.

        Such a run has its pid or Slurm job in the registry here, and it was running when last
        seen. A console attached to it by `attach HOST:PATH` or from the runs list can then
        stop it there. Anything else (attached only, over, not registered, its host not
        configured) gives None.
        """
        registry = registry if registry is not None else Registry()
        try:
            entry = registry.find(run_dir, host)
            if entry is None or entry.status != "running" or not (entry.pid or entry.job):
                return None
            return cls(reopen_there(entry, ssh_options), registry, entry.host, entry.run_dir)
        except (InputError, OSError):
            return None

    # -- its end ------------------------------------------------------------------------

    def stop(self) -> ExitInfo:
        """Stop the run, then end its open attempt.

        The stop sequence is SIGINT, SIGTERM, SIGKILL, over SSH for a far run. The stop is
        recorded first, so that the watcher that sees the exit never restarts it ([recovery]).
        """
        if self.folder is not None and self.opened is not None:
            try:
                attempts.stopping(self.folder, self.opened.number)
            except OSError as exc:
                _warn(f"warn: {self.folder.attempts}: stop not recorded ({exc.strerror or exc})")
        info = self.handle.stop()
        self.end_attempt(info)
        return info

    def end_attempt(self, info: ExitInfo) -> None:
        """The attempt found again (from_registry) ends with `info`."""
        if self.folder is not None and self.opened is not None:
            attempts.end(self.folder, self.opened.number, info)

    def watched_by(self, babysitter: Babysitter) -> None:
        self.babysitter = babysitter
        self.taken = True

    def blind_rule(self) -> tuple[tuple[str, ...], bool]:
        """(the metrics its rules read, whether its preset is blind).

        That is how a line said after the watch shows the trainer's words at its exit
        (core/run/exits.py's `shown_detail`). No read is judged there, so a blind preset's run
        hides them whether or not its read is final; a run whose preset is not known here
        hides them too."""
        if self.preset is None:
            return (), True
        return rule_metrics(self.preset.verdict, self.preset.labels), self.preset.verdict.blind

    def interrupted(self) -> int:
        """Stop the run this launch started, on a Ctrl-C before anything watched it.

        Only this launch's own process is signalled. The stop is said in one line, then the
        run ends as a stopped launch does (`finish`: the registry, the attempt's end,
        verdict.json and the read), and its exit code is returned. A second Ctrl-C while it
        stops is ignored: the stop sequence ends with SIGKILL."""
        print(
            f"SIGINT before the run was watched: stopping {process_label(self.handle)} "
            "(SIGINT, then SIGTERM, then SIGKILL)",
            flush=True,
        )
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            info = self.handle.stop()
            if self.folder is None:  # a run on another host: its exit into the registry here
                self.record_exit()
                print(info.describe(*self.blind_rule()))
                return 1
            return self.finish(info)
        finally:
            signal.signal(signal.SIGINT, old)

    def finish(
        self,
        info: ExitInfo,
        babysitter: Babysitter | None = None,
        out: io.StringIO | None = None,
        restarter: Restarter | None = None,
    ) -> int:
        """End a run launched here and return its exit code.

        This writes the exit in the registry, the attempt's end (an incident posted),
        verdict.json and the final read. The exit code is the verdict's when the run finished
        its recipe, else 1.
        """
        assert self.preset is not None and self.folder is not None and self.prereg
        watch = PlainWatch(
            self.preset,
            self.folder,
            self.handle,
            self.prereg,
            out,
            blind=self.blind,
        )
        watch.babysitter, watch.attempt, watch.restarter = babysitter, self.attempt, restarter
        return finish(watch, self.registry, self.host, info)

    def finish_seen(self, restart: bool = False) -> bool:
        """Finish once, if the process has exited (from any thread), and say whether it did.

        The finish's lines wait in `out` for the console to close (`after_console`). With
        `restart` (the console watching), a restart [recovery] makes (`restarter`) takes the
        attempt's place (`restarted` says it): not finished, its new process is the one to
        watch.
        """
        with self._lock:
            if self.code is not None:
                return True
            info = self.handle.poll()
            if info is None:
                return False
            self.restarted = ""
            code = self.finish(info, self.babysitter, self.out, self.restarter if restart else None)
            if self.restarted:
                return False
            self.code = code
            return True

    def after_console(self, code: int) -> int:
        """Wrap up after the console closed and return the exit code.

        An exit the console saw is finished (a restart still in its backoff is not made), unless
        it already was. A run left going stays registered, and unwatched (`fontaine-tui babysit`
        keeps its notifications coming).
        """
        self.closing.set()
        if self.finish_seen():  # waits for a finish under way
            sys.stdout.write(self.out.getvalue())
            return self.code if self.code is not None else 1
        if self.babysitter is not None:  # detached: the registry keeps it as running
            for line in self.babysitter.close():
                _warn(line)
            if self.babysitter.notices is not None:
                _warn(
                    "notifications stop with the console: `fontaine-tui babysit` keeps "
                    "them coming for detached runs"
                )
        return code

    def babysit_plain(self, poll_s: float, stop_on_exit: bool) -> int:
        """launch --plain: followed line by line to its end (model/plain.py).

        The run is `taken` once the follower begins: a Ctrl-C then detaches or stops it as
        --stop-on-exit says."""
        assert self.preset is not None and self.folder is not None and self.prereg

        def take() -> None:
            self.taken = True

        return babysit(
            self.preset,
            self.folder,
            self.handle,
            self.registry,
            self.host,
            self.prereg,
            poll_s,
            stop_on_exit,
            self.attempt,
            self.blind,
            self.restarter,
            said=self.checks_said,
            taken=take,
        )

    def record_exit(self) -> ExitInfo | None:
        """Record a far run's exit, seen from here (stopped, or seen gone), in the registry.

        Returns the exit, or None while it runs. A registry that cannot take it gives a
        warning.
        """
        info = self.handle.poll()
        if info is None:
            return None
        try:
            self.registry.update(
                self.run_dir,
                self.host,
                status=info.status,
                exit_code=info.code,
                last_step=info.last_step,
                updated_at=utc_iso(time.time()),
            )
        except (InputError, OSError) as exc:
            _warn(f"warn: exit not recorded in the registry ({exc})")
        return info
