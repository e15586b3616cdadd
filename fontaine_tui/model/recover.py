"""A launched run's `[recovery]` kept by its watcher: the restart after an attempt's end.

The watcher's finish (model/plain.py) asks `recover` whether the attempt's end makes a restart
(core/run/recovery.py's plan, each refusal said in one line). A watcher that keeps the
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
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run import attempts
from fontaine_tui.core.run.exits import ExitInfo, shown_detail
from fontaine_tui.core.run.recovery import Restart, plan, user_stopped
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.blindwords import rule_metrics
from fontaine_tui.model.babysitter import Babysitter

LOOK_S = 0.2  # how often a restart's backoff looks for a user's stop
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
    said = _restart_words(watch, due, info)
    watch.say(said)
    if watch.babysitter is not None:
        watch.babysitter.restarting(watch.attempt or 0, said, info.last_step)
    restarted = watch.restarter(due)
    if restarted is not None and watch.babysitter is not None:
        for line in watch.babysitter.close():
            watch.say(line)
    return restarted


def _restart_words(watch: Watcher, due: Restart, info: ExitInfo) -> str:
    """The restart in words, the exit's detail hidden where it may quote a hidden read."""
    if watch.babysitter is not None:  # the exit's words blinded as the posts are
        return due.said(watch.babysitter.exit_words(info)[1])
    preset = watch.preset  # no read to judge: a blind preset's run hides them
    metrics = rule_metrics(preset.verdict, preset.labels)
    return due.said(shown_detail(info.cause, due.detail, metrics, preset.verdict.blind))


def restart_after(
    due: Restart,
    start: Callable[[], Callable[[], int]],
    cancel: threading.Event | None = None,
    say: Callable[[str], None] | None = None,
    run_dir: str = "RUN_DIR",
    ended: tuple[RunFolder, int | None] | None = None,
) -> Callable[[], int] | None:
    """Wait the restart's backoff, then start it; None where it could not start (said).

    `ended` is the run folder and the attempt whose end made the restart. A user's stop of the
    run during the wait (`fontaine-tui stop`, recorded for that attempt) cancels the restart,
    and so does Ctrl-C (recorded as one) or `cancel` set (the console that would watch it
    closed): the run then ends as the attempt left it. `say` (default: print) says so, with how
    to resume `run_dir`."""
    speak = say or _print
    folder, attempt = ended if ended is not None else (None, None)
    resume = f"`fontaine-tui launch PRESET --resume --output-dir {run_dir}` resumes it"
    try:
        if _backoff(due, cancel, speak, folder, attempt, resume):
            return start()
    except KeyboardInterrupt:
        recorded = _stop_recorded(folder, attempt)
        print(f"restart {due.number} of {due.of} not made: interrupted{recorded}", flush=True)
    except (InputError, OSError) as exc:
        print(f"restart {due.number} of {due.of} failed: {exc}", flush=True)
    return None


def _backoff(
    due: Restart,
    cancel: threading.Event | None,
    speak: Callable[[str], None],
    folder: RunFolder | None,
    attempt: int | None,
    resume: str,
) -> bool:
    """Wait the restart's backoff: True once it ran out, False (said) where it was cancelled.

    A user's stop recorded for the attempt cancels it, and so does `cancel` set.
    """
    deadline = time.monotonic() + due.wait_s
    while True:
        if folder is not None and user_stopped(folder, attempt):
            speak(
                f"restart {due.number} of {due.of} not made: a user stopped the run during "
                f"its backoff (fontaine-tui stop), so it stays ended ({resume})"
            )
            return False
        left = deadline - time.monotonic()
        if left <= 0:
            return True
        if cancel is None:
            time.sleep(min(left, LOOK_S))
        elif cancel.wait(min(left, LOOK_S)):
            speak(
                f"restart {due.number} of {due.of} not made: the console closed during its "
                f"backoff, so the run stays ended ({resume})"
            )
            return False


def _stop_recorded(folder: RunFolder | None, attempt: int | None) -> str:
    """A Ctrl-C in the backoff recorded as a user's stop; the words saying whether it was."""
    if folder is None or attempt is None:
        return ""
    try:
        attempts.stopping(folder, attempt)  # a later watcher offers no restart either
    except OSError as exc:
        return f" (the stop not recorded: {exc.strerror or exc})"
    return ", recorded as a user's stop"


def _print(text: str) -> None:
    print(text, flush=True)
