"""Where a launched run's restart is started: `launch --plain`, or the launch console.

The preset's [recovery] decides (core/run/recovery.py) and the watcher's finish says it
(model/recover.py); a `Restarter` from here starts it. `plain` resumes the run as a new
attempt and watches it line by line to its end, with the same restarter for the next one.
`in_console` puts the resumed attempt's process in the LaunchedRun's place, so the console
that holds it watches the new process.
"""

from __future__ import annotations

from collections.abc import Callable

from fontaine_tui.core.run.recovery import Restart
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.model.launched import LaunchedRun
from fontaine_tui.model.recover import Restarter, restart_after

CONSOLE_POLL_S = 2.0  # the registry's poll cadence of a console's restart (launch's default)


def relaunch(run: LaunchedRun, due: Restart, poll_s: float) -> LaunchedRun:
    """The restart the preset's [recovery] makes: the run resumed, a new attempt."""
    assert run.target is not None and run.preset is not None
    again = LaunchedRun.launch(
        run.target,
        run.preset,
        output_dir=run.run_dir,
        resume=True,
        poll_s=poll_s,
        registry=run.registry,
        restart=due,
    )
    again.blind = run.blind
    run.handle.close()
    return again


def _ended(run: LaunchedRun) -> tuple[RunFolder, int | None] | None:
    """The run folder and the attempt whose end makes the restart (a user's stop is its)."""
    return None if run.folder is None else (run.folder, run.attempt)


def plain(run: LaunchedRun, poll_s: float, stop_on_exit: bool) -> Restarter:
    """launch --plain's restarts: each one said, then watched to its end."""

    def start(due: Restart) -> Callable[[], int]:
        again = relaunch(run, due, poll_s)
        again.restarter = plain(again, poll_s, stop_on_exit)
        print(f"{again.said(True)} (restart {due.number} of {due.of})", flush=True)

        def watch() -> int:
            try:
                return again.babysit_plain(poll_s, stop_on_exit)
            finally:
                again.handle.close()

        return watch

    return lambda due: restart_after(due, lambda: start(due), ended=_ended(run))


def in_console(run: LaunchedRun) -> Restarter:
    """The launch console's restarts: the resumed attempt takes the run's place."""

    def start(due: Restart) -> Callable[[], int]:
        again = relaunch(run, due, CONSOLE_POLL_S)
        run.handle, run.started, run.attempt = again.handle, again.started, again.attempt
        run.restarted = f"{again.said(True)} (restart {due.number} of {due.of})"
        run.out.write(run.restarted + "\n")
        return lambda: 0  # the console goes on watching: the run's end is still to come

    def say(text: str) -> None:
        run.out.write(text + "\n")

    return lambda due: restart_after(
        due, lambda: start(due), run.closing, say, run.run_dir, _ended(run)
    )
