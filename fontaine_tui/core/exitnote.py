"""How a launched command ended, kept where a later console can read it.

A process that is not our child cannot be waited for: once a launch is detached (or the
console that launched it closes), its exit code and signal are lost, and the engine writes
them to its own log while a user's own trainer does not. So a [command] runs under this
small parent, in the same process group:

    python -m fontaine_tui.core.exitnote RUN_FOLDER/command.exits.jsonl -- ARGV...

It starts ARGV, lets every signal the group gets reach ARGV (it ignores them itself), waits,
appends one line `{"pid": <its own pid>, "child": <ARGV's pid>, "code": N | null,
"signal": "SIGINT" | null}` to the note (appended, so nothing is written over), and exits as
ARGV did (the same code, or the same signal). `read` finds the line of a given pid.

It imports nothing of the package but childenv (the environment less notification secrets,
as every child gets), so it starts fast.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from fontaine_tui.core.childenv import child_env
from fontaine_tui.core.limits import json_loads

NOTE = "command.exits.jsonl"
FORWARDED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)


def wrapped(argv: list[str], folder: Path, python: str = sys.executable) -> list[str]:
    """The command line that runs `argv` under this module, its exit noted in `folder`."""
    return [python, "-m", __name__, str(folder / NOTE), "--", *argv]


def command_of(argv: list[str]) -> list[str]:
    """The command that `wrapped` runs (`argv` itself when it is not wrapped)."""
    if len(argv) > 5 and argv[1:3] == ["-m", __name__] and argv[4] == "--":
        return argv[5:]
    return argv


def read(folder: Path, pid: int) -> tuple[int | None, str | None] | None:
    """The (exit code, signal name) noted for the parent `pid`, or None when none was noted.

    None means the command is still running, was killed with its group by SIGKILL, or did
    not run under this module.
    """
    try:
        with open(folder / NOTE, "rb") as fh:
            lines = fh.read(1 << 20).splitlines()
    except OSError:
        return None
    for raw in reversed(lines):
        try:
            doc = json_loads(raw)
        except ValueError:
            continue
        if isinstance(doc, dict) and doc.get("pid") == pid:
            code, sig = doc.get("code"), doc.get("signal")
            return (
                code if isinstance(code, int) and not isinstance(code, bool) else None,
                sig if isinstance(sig, str) else None,
            )
    return None


def _in_child() -> None:
    """Make the child ready for exec: it dies with this parent, and gets what the group got.

    It runs in the child between fork and exec. First it asks the kernel to send the child
    SIGTERM when this parent dies (Linux): should this parent be killed (kill -9 of the
    registered pid), no trainer keeps running unwatched. Then it gives each forwarded
    signal its default action back and unblocks them, so one that reached the group since
    the fork acts on the child now, as it would have on ARGV, rather than being caught by
    the handler the fork copied and lost at exec.
    """
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    for sig in FORWARDED:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)


def _ignore(signum: int, frame: object) -> None:
    """The group's signal reached this parent too: the child has it, and decides."""


def main(args: list[str]) -> int:
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m fontaine_tui.core.exitnote NOTE -- ARGV...", file=sys.stderr)
        return 2
    note, argv = Path(args[0]), args[2:]
    for sig in FORWARDED:  # a handler, not SIG_IGN: the child gets the default back at exec
        signal.signal(sig, _ignore)
    # Until ARGV runs, a signal to the group is held here: one that came before the fork
    # never reached the child (it did not exist), so it is sent on once it does; one that
    # came after the fork reaches the child in `_in_child` too, and killed it there.
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    try:
        child = subprocess.Popen(argv, preexec_fn=_in_child, env=child_env(os.environ))
    except OSError as exc:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
        print(f"cannot start {argv[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    held = signal.sigpending() & set(FORWARDED)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    for sig in sorted(held):
        try:
            os.kill(child.pid, sig)  # not yet reaped: at worst it reaches a dead child
        except ProcessLookupError:
            pass
    rc = child.wait()
    line = {
        "pid": os.getpid(),
        "child": child.pid,
        "code": rc if rc >= 0 else None,
        "signal": signal.Signals(-rc).name if rc < 0 else None,
    }
    try:
        # never through a link: the note is ours, in the run folder, or nothing
        fd = os.open(note, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")
    except OSError as exc:
        print(f"{note}: exit not noted ({exc.strerror or exc})", file=sys.stderr)
    if rc < 0:  # die of the same signal, so whoever waits for this parent sees it
        if -rc not in (signal.SIGKILL, signal.SIGSTOP):  # those two have no handler to reset
            signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
