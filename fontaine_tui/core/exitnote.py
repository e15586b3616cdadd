"""How a launched command ended, kept where a later console can read it.

A process that is not our child cannot be waited for: once a launch is detached (or the
console that launched it closes), its exit code and signal are lost, and the engine writes
them to its own log while a user's own trainer does not. So a [command] runs under this
small parent, in the same process group:

    python -m fontaine_tui.core.exitnote RUN_FOLDER/command.exits.jsonl -- ARGV...

It starts ARGV, lets every signal the group gets reach ARGV exactly once (it ignores them
itself), waits, appends one line `{"pid": <its own pid>, "child": <ARGV's pid>, "code": N |
null, "signal": "SIGINT" | null}` to the note (appended, so nothing is written over), and
exits as ARGV did (the same code, or the same signal). ARGV that cannot be started is noted
as code 127, as a shell says it. `read` finds the line of a given pid.

A signal to the group while ARGV is being started has no ARGV to act on yet. From its first
statement this module holds the group's signals blocked; after the fork, the parent reads
which it holds and tells the child through a pipe, and the child, before exec, raises on
itself each one it did not get (one that came before the fork), then takes the default
actions back and unblocks: a signal that came at any moment acts on ARGV once. Only a signal
during Python's own start, before this module runs, can end this parent with no note.

Its imports are Python's own and childenv (the environment less notification secrets, as
every child gets), so it starts fast.
"""

from __future__ import annotations

import os
import signal
import sys

FORWARDED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
if __name__ == "__main__":  # first of all: a signal from now on waits for the command
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)

import json  # noqa: E402
from pathlib import Path  # noqa: E402

from fontaine_tui.core.childenv import child_env  # noqa: E402

NOTE = "command.exits.jsonl"
CANNOT_START = 127  # the code a shell gives a command it cannot run


def signal_name(signum: int) -> str:
    """The note's name for a signal: SIGINT, or SIGRTMIN+2 for a real-time one."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        if signal.SIGRTMIN <= signum <= signal.SIGRTMAX:
            return f"SIGRTMIN+{signum - signal.SIGRTMIN}"
        return f"signal {signum}"


def signal_number(name: str | None) -> int | None:
    """The signal a note names (`signal_name`'s inverse), or None when it names none."""
    if not name:
        return None
    if name in signal.Signals.__members__:
        return signal.Signals[name].value
    if name.startswith("SIGRTMIN+") and name[9:].isdigit():
        n = signal.SIGRTMIN + int(name[9:])
        return n if n <= signal.SIGRTMAX else None
    if name.startswith("signal ") and name[7:].isdigit():
        return int(name[7:])
    return None


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
    from fontaine_tui.core.limits import json_loads  # not in the wrapper: it starts fast

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


def _die_with_parent() -> None:
    """Ask the kernel to send this (child) process SIGTERM when its parent dies (Linux).

    Should the parent be killed (kill -9 of the registered pid), no trainer keeps running
    unwatched.
    """
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _mask(signums: set[int]) -> bytes:
    return bytes([sum(1 << i for i, sig in enumerate(FORWARDED) if sig in signums)])


def _exec_child(argv: list[str], env: dict[str, str], go: int) -> None:
    """The child, between fork and exec: never returns.

    It waits for the parent's word of which signals it holds, raises on itself each that
    did not reach it (pending in the parent since before the fork), takes the default
    actions back and unblocks: any of them now ends it, as it would have ended ARGV.
    """
    try:
        _die_with_parent()
        word = os.read(go, 1)
        os.close(go)
        held = {sig for i, sig in enumerate(FORWARDED) if word and word[0] & (1 << i)}
        for sig in sorted(held - signal.sigpending()):
            os.kill(os.getpid(), sig)
        for sig in FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        print(f"cannot start {argv[0]}: {exc.strerror or exc}", file=sys.stderr, flush=True)
    finally:
        os._exit(CANNOT_START)


def _ignore(signum: int, frame: object) -> None:
    """The group's signal reached this parent too: the child has it, and decides."""


def _wait(pid: int) -> int:
    """The child's end as Popen's returncode: its exit code, or minus its signal."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            return CANNOT_START
        if os.WIFEXITED(status):
            return os.WEXITSTATUS(status)
        if os.WIFSIGNALED(status):
            return -os.WTERMSIG(status)


def main(args: list[str]) -> int:
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m fontaine_tui.core.exitnote NOTE -- ARGV...", file=sys.stderr)
        return 2
    note, argv = args[0], args[2:]
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)  # as at import, when not __main__
    for sig in FORWARDED:  # a handler, not SIG_IGN: the child gets the default back at exec
        signal.signal(sig, _ignore)
    env = child_env(os.environ)
    go_read, go_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(go_write)
        _exec_child(argv, env, go_read)
    os.close(go_read)
    # The child waits for this word before it execs, so a signal held here is either one it
    # has pending too (it came after the fork) or one it never got: it tells them apart.
    os.write(go_write, _mask(signal.sigpending() & set(FORWARDED)))
    os.close(go_write)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)  # what is held now, `_ignore`s
    rc = _wait(pid)
    line = {
        "pid": os.getpid(),
        "child": pid,
        "code": rc if rc >= 0 else None,
        "signal": signal_name(-rc) if rc < 0 else None,
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
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [-rc])
        os.kill(os.getpid(), -rc)
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
