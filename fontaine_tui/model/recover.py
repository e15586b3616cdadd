"""A launched run's `[recovery]` kept by its watcher: the restart after an attempt's end.

The watcher's finish (model/plain.py) asks `recover` whether the attempt's end makes a restart
(core/launch/recovery.py's plan, each refusal said in one line). A watcher that keeps the
contract (`launch --plain`, the launch console) hands it a `Restarter`: `restart_after` waits
the backoff, starts the resume (model/launched.py) and returns what watches it to its end. A
watcher that does not restart (`babysit`, a console already closed) says which restart was
due and how to make it by hand.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.launch.exits import ExitInfo
from fontaine_tui.core.launch.recovery import Restart, plan
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.model.babysitter import Babysitter

# a restart started, given what it is: what watches it to its end (None: it could not start)
Restarter = Callable[[Restart], Callable[[], int] | None]


class Watcher(Protocol):
    """What `recover` needs of a watcher: the run, its attempt, its voice and its restarter."""

    @property
    def preset(self) -> Preset: ...

    folder: RunFolder
    attempt: int | None
    babysitter: Babysitter | None
    restarter: Restarter | None

    def say(self, text: str) -> None: ...


@dataclass
class Bystander:
    """A watcher that does not restart (`babysit`): it says the restart that is due."""

    preset: Preset
    folder: RunFolder
    attempt: int | None
    babysitter: Babysitter | None
    say: Callable[[str], None]
    restarter: Restarter | None = None


def recover(watch: Watcher, info: ExitInfo, store: RunStore) -> Callable[[], int] | None:
    """The preset's [recovery] held to this end: what watches the restart, or None (said why).

    The attempt's babysitter posts the restart and is closed once the restart started; the
    restart's own watch ends the run."""
    due, why = plan(watch.preset.recovery, info, watch.folder, watch.attempt, store)
    if why:
        watch.say(why)
    if due is None:
        return None
    if watch.restarter is None:
        watch.say(
            f"not restarted: {due.cause} makes restart {due.number} of {due.of}, but this "
            "watcher does not restart runs (launch does); "
            f"`fontaine-tui launch PRESET --resume --output-dir {watch.folder.root}` continues it"
        )
        return None
    watch.say(due.said())
    if watch.babysitter is not None:
        watch.babysitter.restarting(watch.attempt or 0, due.said(), info.last_step)
    restarted = watch.restarter(due)
    if restarted is not None and watch.babysitter is not None:
        for line in watch.babysitter.close():
            watch.say(line)
    return restarted


def restart_after(
    due: Restart,
    start: Callable[[], Callable[[], int]],
    cancel: threading.Event | None = None,
    say: Callable[[str], None] | None = None,
    run_dir: str = "RUN_DIR",
) -> Callable[[], int] | None:
    """Wait the restart's backoff, then start it; None where it could not start (said).

    Ctrl-C during the wait cancels the restart, and so does `cancel` set (the console that would
    watch it closed): the run then ends as the attempt left it. `say` (default: print) says
    so, with how to resume `run_dir`."""
    try:
        if cancel is None:
            time.sleep(due.wait_s)
        elif cancel.wait(due.wait_s):
            (say or _print)(
                f"restart {due.number} of {due.of} not made: the console closed during its "
                "backoff, so the run stays ended (`fontaine-tui launch PRESET --resume "
                f"--output-dir {run_dir}` resumes it)"
            )
            return None
        return start()
    except KeyboardInterrupt:
        print(f"restart {due.number} of {due.of} not made: interrupted", flush=True)
    except (InputError, OSError) as exc:
        print(f"restart {due.number} of {due.of} failed: {exc}", flush=True)
    return None


def _print(text: str) -> None:
    print(text, flush=True)
