"""`fontaine-tui babysit`: detached runs watched without a console, here or over SSH.

One `RunWatch` per run: its source followed, its engine's pid checked (a run on this host),
telemetry sampled (here, or the far host's over the SSH connection), the warning rules judged
and the run's `Babysitter` ticked every poll. A run ends when its engine is gone or its log
says `end`: the final read is sent and the watch closes. With no RUN named, the registry's
live runs are watched, and it is read again every `rescan_s` for runs launched since: the
process a user leaves in tmux or as a systemd user service (`babysit --print-unit`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import RunSource
from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.follow.open import open_source, run_source
from fontaine_tui.core.follow.ssh import SshRun
from fontaine_tui.core.host import telemetry
from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.log.formats.spec import SourceSpec
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run.attempts import Attempt
from fontaine_tui.core.run.evidence import ledger_refusal
from fontaine_tui.core.run.exits import ExitInfo
from fontaine_tui.core.runfolder import PREREG, RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict import blind
from fontaine_tui.core.verdict.prereg import parse_prereg, parse_utc, utc_iso
from fontaine_tui.core.verdict.text import render
from fontaine_tui.model.attempt_end import end_attempt
from fontaine_tui.model.babysitter import Babysitter
from fontaine_tui.model.launched import LaunchedRun
from fontaine_tui.model.recover import Bystander, recover
from fontaine_tui.model.session import Process, Session

LIVE = ("running", "attached")


@dataclass(frozen=True, slots=True)
class WatchedRun:
    """A run to watch: what `attach` would take, and its registry entry when it has one."""

    spec: str  # a run folder or [user@]host:/path
    entry: Entry | None = None

    @property
    def key(self) -> str:
        return self.spec


def watched_runs(names: list[str], registry: Registry, this_host: str) -> list[WatchedRun]:
    """The RUN arguments (a registry name, a run folder, host:/path) as runs to watch.

    With no arguments, they are every live entry of the registry.
    """
    entries = registry.entries()
    if not names:
        return [_of(e, this_host) for e in entries if e.status in LIVE]
    return [_watched(name, entries, this_host) for name in names]


def _watched(name: str, entries: list[Entry], this_host: str) -> WatchedRun:
    """One RUN argument as a run to watch.

    A registry name (of one run only), else a run folder here (with its entry where this
    host's registry holds it), else [user@]host:/path as it is.
    """
    named = [e for e in entries if e.name == name]
    if len(named) > 1:
        raise InputError(
            f"{name}: {len(named)} registered runs have this name; name the "
            "run folder instead (fontaine-tui runs lists them)"
        )
    if named:
        return _of(named[0], this_host)
    local = Path(name).expanduser()
    if not local.is_dir():
        return WatchedRun(name, None)
    here = local.resolve()
    found = next((e for e in entries if e.host == this_host and Path(e.run_dir) == here), None)
    return WatchedRun(str(here), found)


def _of(entry: Entry, this_host: str) -> WatchedRun:
    return WatchedRun(
        entry.run_dir if entry.host == this_host else f"{entry.host}:{entry.run_dir}", entry
    )


async def _frozen_preset(source: RunSource) -> Preset:
    """The preset prereg.json froze, read through `source` (closed where it cannot be read)."""
    try:
        raw = await source.read_bytes(PREREG)  # also proves the folder is reachable
        if raw is None:
            raise InputError(
                f"{source.label}: no {PREREG} in the run folder (babysit watches launched runs)"
            )
        return parse_prereg(raw, f"{source.label}/{PREREG}").frozen_preset()
    except BaseException:
        await source.close()
        raise


async def _command_log(source: RunSource, log: SourceSpec) -> RunSource:
    """A launched [command]'s log, as frozen, read here or over the run's connection."""
    if isinstance(source, LocalRun):
        await source.close()
        return run_source(source.folder, log)
    if isinstance(source, SshRun):
        return ForeignRun(source.target.path, log, transport=source)
    return source


def _given_preset(target: WatchedRun, frozen: Preset) -> Preset:
    """The preset the registry names, for its [[notify]] and [babysit]; else the frozen one."""
    if target.entry is not None and target.entry.preset:
        with contextlib.suppress(InputError):
            return load_preset(target.entry.preset)
    return frozen


def _began(attempt: Attempt | None) -> float | None:
    """When the open attempt began: its polls judged from then; None where unknown."""
    if attempt is not None:
        with contextlib.suppress(ValueError):
            return parse_utc(attempt.began_at)
    return None


class RunWatch:
    """One run, followed and babysat until it ends (or the watch is closed)."""

    def __init__(
        self,
        target: WatchedRun,
        session: Session,
        babysitter: Babysitter,
        sampler: Callable[[], object] | None,
        say: Callable[[str], None],
        clock: Callable[[], float],
    ) -> None:
        self.target, self.session, self.babysitter = target, session, babysitter
        self.sampler, self.say, self.clock = sampler, say, clock
        self.telemetry: TelemetrySnapshot | None = None
        self.ended = ""
        self.exit: ExitInfo | None = None  # the engine's, when its end was seen here
        self.attempt: Attempt | None = None  # its open attempt in attempts.jsonl
        self._reader: asyncio.Task | None = None

    @classmethod
    async def open(
        cls,
        target: WatchedRun,
        this_host: str,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.time,
        ssh_options: tuple[str, ...] = (),
    ) -> RunWatch:
        source: RunSource = open_source(target.spec, ssh_options=ssh_options)
        frozen = await _frozen_preset(source)
        process, sampler, attempt = cls._process(target, source, this_host)
        if frozen.foreign and frozen.source is not None:  # a launched [command]: its log
            source = await _command_log(source, frozen.source)
        session = Session(source, _given_preset(target, frozen), "attach", process)
        await session.read_ledger()
        label = literal(target.entry.name if target.entry else source.label)
        since = _began(attempt)
        sitter = Babysitter.for_session(
            session,
            "babysit",
            this_host,
            lambda text: say(f"{label}: {text}"),
            clock=clock,
            auto_final=process is None,
            since=since,
        )
        if session.ledger.error:  # the read stays blinded or is refused: the break said
            say(f"{label}: WARNING: {literal(ledger_refusal(session.ledger.error))}")
        watch = cls(target, session, sitter, sampler, say, clock)
        watch.attempt = attempt
        return watch

    @staticmethod
    def _process(
        target: WatchedRun, source: RunSource, this_host: str
    ) -> tuple[Process | None, Callable[[], object] | None, Attempt | None]:
        """The engine of a run of this host's registry, found again by pid.

        A Slurm job runs on its node: no sampler, since this host's RAM and GPUs are not its.

        The engine is judged from its attempt's start (attempts.jsonl: its log offsets, its
        OOM-kill counters).
        """
        if isinstance(source, SshRun):
            return (
                None,
                partial(telemetry.sample_remote, source.run_command, source.target.host),
                None,
            )
        entry = target.entry
        if entry is not None and entry.job:  # on its node: this host's look is another machine's
            return None, None, None
        if entry is None or entry.host != this_host or entry.pid <= 0:
            return None, partial(telemetry.sample, pid=None), None
        launched = LaunchedRun.from_registry(entry, Registry(), this_host)
        return launched.handle, partial(telemetry.sample, pid=entry.pid), launched.opened

    @property
    def name(self) -> str:
        return literal(self.target.entry.name if self.target.entry else self.session.source.label)

    def start(self) -> None:
        async def read() -> None:
            async for batch in self.session.source.follow():
                self.session.apply(batch)

        self._reader = asyncio.create_task(read())

    async def look(self) -> bool:
        """One poll; True once the run has ended (the final read then sent)."""
        if self.sampler is not None:
            await self._sample(self.sampler)
        now = self.clock()
        session = self.session
        session.update_warnings(self.telemetry, now)
        self.babysitter.tick(self.telemetry, now)
        exit_info = session.process.poll() if session.process is not None else None
        if exit_info is not None:
            await self._exited(self.babysitter.exit_of(exit_info))
        elif self.babysitter.finalized:
            self.ended = "the log ended"
        if self.ended:
            latest = session.latest()
            label = blind.BLINDED if self.babysitter.hides(latest) else latest.label
            self.say(f"{self.name}: {self.ended}; verdict {label}")
        return bool(self.ended)

    async def _sample(self, sampler: Callable[[], object]) -> None:
        """Telemetry sampled (here, or awaited from the far host); a failure is the note."""
        try:
            result = await asyncio.to_thread(sampler)
            if inspect.isawaitable(result):
                result = await asyncio.wait_for(result, 30)
            self.telemetry = result if isinstance(result, TelemetrySnapshot) else None
        except Exception as exc:  # telemetry is a help, not a condition
            self.session.note = f"telemetry: {type(exc).__name__}: {exc}"

    async def _exited(self, exit_info: ExitInfo) -> None:
        """The engine gone: its attempt ended, a restart due said, the final read sent."""
        session = self.session
        await asyncio.sleep(0.5)  # the last lines
        if self.attempt is not None and session.folder is not None:
            folder, number = RunFolder(session.folder), self.attempt.number
            end_attempt(folder, number, exit_info, self.babysitter, self._say_named)
            seen = Bystander(session.preset, folder, number, self.babysitter, self._say_named)
            recover(seen, exit_info, session.store)  # the restart due, said
        verdict = session.latest()
        said, _ = self.babysitter.exit_words(exit_info)  # blinded as the posts are
        self.babysitter.final(verdict, render(verdict, session.source.label), said)
        self.ended, self.exit = said, exit_info

    def _say_named(self, text: str) -> None:
        self.say(f"{self.name}: {text}")

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        await self.session.source.close()
        for line in await asyncio.to_thread(self.babysitter.close):
            self.say(f"{self.name}: {line}")


async def watch(
    names: list[str],
    registry: Registry,
    this_host: str,
    poll_s: float,
    say: Callable[[str], None],
    rescan_s: float = 30.0,
    clock: Callable[[], float] = time.time,
    once: bool = False,
    ssh_options: tuple[str, ...] = (),
) -> int:
    """Watch until every named run ended (or, with no names, for ever).

    With `once`, poll each once, then stop (a cron job's way). Returns 0, or 1 when a named
    run could not be watched.
    """
    runs = _Watches(registry, this_host, say, clock, ssh_options)
    await runs.add(watched_runs(names, registry, this_host))
    if names and not runs.open:
        return 1
    try:
        while True:
            if not names:  # the registry read again for runs launched since
                await runs.rescan(rescan_s)
            await runs.look()
            if once or (names and not runs.open):
                break
            await asyncio.sleep(poll_s)
    finally:
        await runs.close()
    return 1 if names and runs.failed else 0


class _Watches:
    """The runs babysat, each until it ends, and those that could not be watched (not again)."""

    def __init__(
        self,
        registry: Registry,
        this_host: str,
        say: Callable[[str], None],
        clock: Callable[[], float],
        ssh_options: tuple[str, ...],
    ) -> None:
        self.registry, self.this_host, self.say = registry, this_host, say
        self.clock, self.ssh_options = clock, ssh_options
        self.open: dict[str, RunWatch] = {}
        self.failed: set[str] = set()
        self._next_scan = -math.inf

    async def add(self, found: list[WatchedRun]) -> None:
        """Watch each run found that is not watched or failed already."""
        for t in found:
            if t.key in self.open or t.key in self.failed:
                continue
            try:
                w = await asyncio.wait_for(
                    RunWatch.open(t, self.this_host, self.say, self.clock, self.ssh_options), 60
                )
            except (InputError, OSError, asyncio.TimeoutError) as exc:
                self.failed.add(t.key)
                self.say(f"{t.spec}: not watched: {exc or 'timed out'}")
                continue
            w.start()
            self.open[t.key] = w
            self.say(
                f"{w.name}: babysitting {w.session.source.label}"
                + ("" if w.babysitter.poll_log else " (shown only: another watcher has it)")
            )

    async def rescan(self, rescan_s: float) -> None:
        """The registry's live runs added, every `rescan_s` seconds; a registry not read said."""
        if time.monotonic() < self._next_scan:
            return
        self._next_scan = time.monotonic() + rescan_s
        try:
            await self.add(watched_runs([], self.registry, self.this_host))
        except InputError as exc:
            self.say(f"warn: {exc}")

    async def look(self) -> None:
        """One poll of each run; a run that ended is recorded in the registry and let go."""
        for key, w in list(self.open.items()):
            if await w.look():
                _record(self.registry, w, self.clock())
                await w.close()
                del self.open[key]

    async def close(self) -> None:
        for w in self.open.values():
            await w.close()


def _record(registry: Registry, w: RunWatch, now: float) -> None:
    """Record an exit seen here in the registry.

    Then a restarted babysitter does not announce it again.
    """
    entry, info = w.target.entry, w.exit
    if entry is None or info is None:
        return
    try:
        registry.update(
            entry.run_dir,
            entry.host,
            status=info.status,
            exit_code=info.code,
            last_step=max(info.last_step, w.session.store.last_step),
            updated_at=utc_iso(now),
        )
    except (InputError, OSError) as exc:
        w.say(f"{w.name}: warn: exit not recorded in the registry ({exc})")
