"""The runs list: every registered run as a row of the runs screen, its state checked live.

`registry_entries` reads this host's runs, and `fleet_entries` every host's (as
`fontaine-tui runs` checks them). `RunsList` reads them at most every few seconds however
often the screen redraws, and `open_run` opens a session on the run picked.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol
from urllib.parse import quote

from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.follow.open import run_source
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.log.formats.locate import detect_foreign
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run.attached import entry_preset
from fontaine_tui.core.runfolder import PREREG, RunFolder
from fontaine_tui.core.runs.fleet import Fleet, row_cells
from fontaine_tui.core.runs.registry import Entry, live_statuses
from fontaine_tui.core.verdict.prereg import read_prereg
from fontaine_tui.model.session import Process, Session
from fontaine_tui.model.view import Outcome


class RegistryReader(Protocol):
    """What the runs list reads of the run registry (core/runs/registry.py): its entries."""

    def entries(self) -> list[Entry]: ...


@dataclass(frozen=True, slots=True)
class RunEntry:
    name: str
    folder: str
    pid: int | None
    state: str
    launched: str
    host: str = ""  # set by a fleet check (core/runs/fleet.py): every host's runs
    reading: str = ""  # step/total, the read, and how old the reading is
    cells: tuple[str, ...] = ()  # a fleet check's columns (fleet.CELLS), as `runs` shows them

    @property
    def target(self) -> str:
        """The run as attach takes it, the folder here or host:folder on another host.

        For a host with a port, registered as ssh://user@host:port, it is that URI with the
        folder as its path.
        """
        if not self.host or self.local:
            return self.folder
        if self.host.startswith("ssh://"):
            # a folder relative to the remote home keeps its /~/ (the URI's path is absolute)
            path = self.folder[1:] if self.folder.startswith("/") else f"~/{self.folder}"
            return f"{self.host}/{quote(path)}"
        return f"{self.host}:{self.folder}"

    @property
    def local(self) -> bool:
        return not self.host or self.host == hostname()


LOCAL_LOOK_S = 0.5  # the runs screen's first draw waits at most this for this host's runs


def registry_entries(registry: RegistryReader | None) -> tuple[list[RunEntry], str]:
    """The runs screen's rows and, when there are none, why.

    The state is the live one (pid checked, log tail read: `registry.live_status`), as
    `fontaine-tui runs` shows it.
    """
    if registry is None:
        return [], "no registry given"
    try:
        items: list[Entry] = list(registry.entries())
    except Exception as exc:  # a broken registry file is shown, not raised
        return [], f"registry unreadable: {exc}"
    host = hostname()
    # on the screen's first draw: a Slurm job's scheduler may be slow; its row says so
    live = live_statuses(items, host, LOCAL_LOOK_S)
    rows = []
    for e in items:
        st = live.get(e.key)
        state = st.state if st is not None else ("remote" if e.host != host else "checking")
        rows.append(RunEntry(e.name, e.run_dir, e.pid or None, state, e.launched_at))
    return rows, "the registry is empty"


def fleet_entries(
    registry: RegistryReader, fleet: Fleet, blind: bool = False
) -> tuple[list[RunEntry], str]:
    """Every registered run, every host's checked live (as `fontaine-tui runs` checks them).

    `blind`: the viewer's --blind, which hides each row's read as a blind preset hides it
    (the fleet asks core/verdict/blind.py's `hidden` of each read)."""
    try:
        items = registry.entries()
    except Exception as exc:
        return [], f"registry unreadable: {exc}"
    here = hostname()
    t0 = time.monotonic()
    rows, down = fleet.check(items, blind)
    live = live_statuses(items, here, max(0.2, fleet.deadline_s - (time.monotonic() - t0)))
    now = time.time()
    out = []
    for e, r in zip(items, rows, strict=True):
        st = live.get(e.key)
        state = st.state if st is not None else r.state
        cells = row_cells(r, now)
        out.append(
            RunEntry(
                e.name,
                e.run_dir,
                e.pid or None,
                state,
                e.launched_at,
                e.host,
                f"{cells[0]}  {cells[3]}  {cells[-1]}",
                cells,
            )
        )
    why = "; ".join(f"{h}: {w}" for h, w in down.items())
    return out, why or "the registry is empty"


class RunsList:
    """The runs screen's rows, read at most every `every_s` however often the screen redraws.

    Each read covers the registry and every local run's log tail. With a `fleet`, every
    host's runs are checked too, in a thread. `rows` answers at once with the last read (the
    first time, this host's runs and the others "checking"). `blind` says, at each look,
    whether the viewer asked for the blind (`Session.blind_asked`): the rows' reads are then
    hidden until final, as every other surface of that console hides them.
    """

    def __init__(
        self,
        registry: RegistryReader | None,
        every_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        fleet: Fleet | None = None,
        blind: Callable[[], bool] = lambda: False,
    ) -> None:
        self.registry, self.every_s, self.clock, self.fleet = registry, every_s, clock, fleet
        self.blind = blind
        self._at: float | None = None
        self._rows: tuple[list[RunEntry], str] = ([], "")
        self._looking: threading.Thread | None = None

    def rows(self) -> tuple[list[RunEntry], str]:
        now = self.clock()
        if self._at is not None and now - self._at < self.every_s:
            return self._rows
        if self.fleet is None or self.registry is None:
            self._rows, self._at = registry_entries(self.registry), now
            return self._rows
        if self._looking is None or not self._looking.is_alive():
            self._look(now, self.registry, self.fleet)
        return self._rows

    def _look(self, now: float, registry: RegistryReader, fleet: Fleet) -> None:
        """The fleet looked at in a thread, its rows kept when it answers.

        Before its first answer, this host's rows now, the other hosts' "checking".
        """
        if self._at is None:  # nothing yet: this host's rows now, the rest to come
            rows, why = registry_entries(registry)
            self._rows = (
                [replace(r, state="checking") if r.state == "remote" else r for r in rows],
                why,
            )
        self._at = now
        blind = self.blind()

        def look() -> None:
            self._rows = fleet_entries(registry, fleet, blind)

        self._looking = threading.Thread(target=look, daemon=True, name="fleet")
        self._looking.start()


def open_run(
    session: Session, folder: Path, registry: RegistryReader | None = None
) -> tuple[Session, Outcome | None]:
    """A session on the run folder picked from the runs list, and a warning when one is due.

    The session uses the folder's frozen preset when it has one. A run another trainer writes
    (no prereg.json) is followed through its format, with the preset it was registered with.
    Else it takes `session`'s preset, and the warning says why. The viewer's --blind goes
    with them: a run picked from the list is as blind as the one shown.
    """
    opened, why = _open_run(session, folder, registry)
    opened.blind_asked = session.blind_asked
    return opened, why


def _open_run(
    session: Session, folder: Path, registry: RegistryReader | None
) -> tuple[Session, Outcome | None]:
    if not (folder / PREREG).exists():
        foreign = _foreign_at(session, folder, registry)
        if foreign is not None:
            return foreign
    preset, why = session.preset, None
    try:
        preset = read_prereg(RunFolder(folder)).frozen_preset(str(folder / PREREG))
    except Exception as exc:  # keep the current preset, say why
        why = Outcome(f"{folder}: using preset {preset.name} ({exc})", "warning")
    return (Session(run_source(folder, preset.source), preset, "attach", None, folder), why)


def open_target(
    session: Session,
    target: str,
    registry: RegistryReader | None = None,
    ssh_options: tuple[str, ...] = (),
    process: Process | None = None,
) -> tuple[Session, Outcome | None]:
    """A session on a runs-list row: a folder here (`open_run`), or host:folder over SSH.

    A host:folder row is followed over SSH as `attach host:/path` follows it; its
    prereg.json, read through the connection (`Session.read_ledger`), gives its preset.
    `process` is its engine when the console may stop it.
    """
    from fontaine_tui.core.follow.ssh import SshRun
    from fontaine_tui.core.follow.target import parse_follow_target
    from fontaine_tui.core.ssh.destination import SshTarget

    parsed = parse_follow_target(target)
    if not isinstance(parsed, SshTarget):
        return open_run(session, Path(parsed.folder), registry)
    far = Session(SshRun(parsed, ssh_options), session.preset, "attach", process)
    far.preset_named = False  # its prereg.json, read over SSH, is the run's preset
    far.blind_asked = session.blind_asked  # the viewer's --blind, as for a folder here
    return far, None


def _foreign_at(
    session: Session, folder: Path, registry: RegistryReader | None
) -> tuple[Session, Outcome | None] | None:
    """A session on a foreign run folder, or None for a folder of ours.

    The folder is read as its registered preset reads it, else as its contents are (with
    `session`'s preset, which is said).
    """
    registered = _registered_preset(folder, registry)
    if registered is not None and registered.foreign and registered.source is not None:
        return Session(
            ForeignRun(folder, registered.source), registered, "attach", None, folder
        ), None
    kind = detect_foreign(folder)
    if not kind:
        return None
    why = Outcome(
        f"{folder}: a {kind} run with no preset registered: read with preset {session.preset.name}",
        "warning",
    )
    return Session(
        ForeignRun(folder, SourceSpec(kind)), session.preset, "attach", None, folder
    ), why


def _registered_preset(folder: Path, registry: RegistryReader | None) -> Preset | None:
    """The preset the registry names for `folder` (its last entry with no process), or None.

    A broken registry names none: the folder's contents say.
    """
    registered = None
    try:
        entries = registry.entries() if registry is not None else []
    except Exception:  # a broken registry: the folder's contents say
        entries = []
    for e in entries:
        if Path(e.run_dir) == folder and not e.pid:
            registered = entry_preset(e.preset, e.preset_sha256)
    return registered
