"""Every command that opens the console prints its --plain form where no terminal can hold
the console: stdout or stderr a file or a pipe, TERM dumb or unset. The real command in a
subprocess, to a file and in a real pseudo-terminal; it says so once on stderr and exits
with the plain form's code."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.core.verdict.record import EXIT_CODES
from tests.commands.test_attach_replay import freeze
from tests.commands.test_command_hostile import ARGV
from tests.commands.test_command_hostile import _preset as command_preset
from tests.logs import write_log

ROOT = Path(__file__).resolve().parents[2]
FAST = ("--speed", "1e6")
DEMO_END = "demo verdict: HEALTHY (final, step 300 of 300, delta -1.9247)"
TMUX = shutil.which("tmux") or "tmux"


def note(why: str) -> str:
    return f"fontaine-tui: {why}: printing the plain form (--plain)"


def environ(tmp_path: Path, **extra: str | None) -> dict[str, str]:
    env = dict(
        os.environ,
        TERM="xterm-256color",
        FONTAINE_BANK=str(tmp_path / "users-bank"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    env.pop("FONTAINE_NOTIFY", None)
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def cli(tmp_path: Path, *argv: str, **env: str | None) -> subprocess.CompletedProcess:
    """The command with its stdout and stderr pipes (no terminal), stdin closed."""
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=environ(tmp_path, **env),
    )


class Terminal:
    """A real terminal, a tmux pane of its own server, running one shell line.

    The shell writes the command's exit code to a file when it ends, and the pane stays, so
    all it wrote (the history too) can be read.
    """

    def __init__(self, tmp_path: Path, command: str) -> None:
        self.command = command
        self.code = tmp_path / "exit-code"
        self.sock = f"fontaine-noterm-{os.getpid()}-{time.monotonic_ns()}"
        conf = tmp_path / "tmux.conf"
        conf.write_text("set -g remain-on-exit on\nset -g history-limit 50000\n")
        env = environ(tmp_path)
        env.pop("TMUX", None)  # a test run inside tmux starts a server of its own all the same
        subprocess.run(
            [TMUX, "-L", self.sock, "-f", str(conf), "new-session", "-d", "-s", "t"]
            + ["-x", "160", "-y", "40", "-c", str(tmp_path)]
            + [f"{command}; echo $? > {shlex.quote(str(self.code))}"],
            check=True,
            timeout=10,
            env=env,
        )

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            [TMUX, "-L", self.sock, *args], capture_output=True, text=True, timeout=10
        ).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t")

    def exit_code(self) -> int | None:
        """The command's exit code (128 + a signal that ended it), None while it runs."""
        try:
            return int(self.code.read_text())
        except (FileNotFoundError, ValueError):  # not yet, or being written
            return None

    def wait(self, timeout: float = 60) -> int:
        """The exit code of a command that ends by itself within `timeout`, else the test
        fails (a console waiting for its keys)."""
        deadline = time.monotonic() + timeout
        while (code := self.exit_code()) is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.command} did not end in {timeout} s:\n{self.screen()}")
            time.sleep(0.2)
        while self.tmux("display-message", "-p", "-t", "t", "#{pane_dead}").strip() != "1":
            assert time.monotonic() < deadline + 10, "the pane outlived its shell"
            time.sleep(0.1)  # tmux has read all the command wrote when the pane is dead
        return code

    def lines(self) -> list[str]:
        """All the command wrote to the terminal, one wrapped line joined again."""
        seen = self.tmux("capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", "t")
        lines = [ln.rstrip() for ln in seen.splitlines() if not ln.startswith("Pane is dead")]
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *_exc: object) -> None:
        subprocess.run([TMUX, "-L", self.sock, "kill-server"], capture_output=True, timeout=10)


def fontaine(*argv: str, term: str | None = "xterm-256color") -> str:
    """The command as a shell line with its TERM (None: unset) in place of the one tmux sets."""
    env = ["env", "-u", "TERM"] if term is None else ["env", f"TERM={term}"]
    return shlex.join([*env, sys.executable, "-m", "fontaine_tui", *argv])


def test_demo_with_stdout_to_a_file_prints_the_plain_form_and_ends(tmp_path):
    out = tmp_path / "demo.txt"
    with open(out, "w") as f:
        proc = subprocess.run(
            [sys.executable, "-m", "fontaine_tui", "demo", *FAST],
            stdin=subprocess.DEVNULL,
            stdout=f,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env=environ(tmp_path),
        )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == note("stdout is not a terminal") + "\n"
    lines = out.read_text().splitlines()
    assert lines[-1] == DEMO_END
    assert "-- end of replay (train_log.jsonl)" in lines


@pytest.mark.parametrize(
    "term, why", [("dumb", "TERM is dumb"), (None, "TERM is not set"), ("", "TERM is not set")]
)
def test_demo_in_a_terminal_that_says_dumb_or_nothing_prints_the_plain_form(tmp_path, term, why):
    with Terminal(tmp_path, fontaine("demo", *FAST, term=term)) as t:
        code = t.wait()
        lines = t.lines()
    assert code == 0, lines[-20:]
    assert lines.count(note(why)) == 1, lines[:5]
    assert lines[-1] == DEMO_END
    assert "-- end of replay (train_log.jsonl)" in lines


def test_demo_with_stderr_to_a_file_prints_the_plain_form(tmp_path):
    """The console draws on stderr: a file there cannot hold it either."""
    err = tmp_path / "err.txt"
    with Terminal(tmp_path, fontaine("demo", *FAST) + f" 2>{shlex.quote(str(err))}") as t:
        code = t.wait()
        lines = t.lines()
    assert code == 0, lines[-20:]
    assert err.read_text() == note("stderr is not a terminal") + "\n"
    assert lines[-1] == DEMO_END


def test_demo_with_stdin_from_dev_null_prints_the_plain_form(tmp_path):
    """The console's keys come from stdin: from /dev/null no `q` ever comes, and it spun."""
    with Terminal(tmp_path, fontaine("demo", *FAST) + " </dev/null") as t:
        code = t.wait()
        lines = t.lines()
    assert code == 0, lines[-20:]
    assert lines.count(note("stdin is not a terminal")) == 1, lines[:5]
    assert lines[-1] == DEMO_END


def test_demo_in_a_terminal_whose_encoding_cannot_draw_it_prints_the_plain_form(tmp_path):
    """An ASCII output (a C locale without UTF-8) drew the console's bars and boxes as
    `\\u2501` escapes and its layout broke: the plain form instead, with `?` in place."""
    line = fontaine("demo", *FAST).replace("env ", "env PYTHONIOENCODING=ascii ", 1)
    with Terminal(tmp_path, line) as t:
        code = t.wait()
        lines = t.lines()
    assert code == 0, lines[-20:]
    assert lines.count(note("stdout's encoding (ascii) cannot draw the console")) == 1, lines[:5]
    assert not any("\\u2501" in ln for ln in lines)


def test_demo_in_a_terminal_that_can_hold_it_opens_the_console(tmp_path):
    """The other side: a terminal and a TERM get the console, which waits for `q`."""
    with Terminal(tmp_path, fontaine("demo", *FAST)) as t:
        deadline = time.monotonic() + 60
        while "REPLAY (ENDED)" not in (screen := t.screen()):
            assert time.monotonic() < deadline, screen
            assert t.exit_code() is None, t.lines()[-20:]
            time.sleep(0.2)
        assert "plain form" not in screen
        t.tmux("send-keys", "-t", "t", "q")
        assert t.wait(timeout=15) == 0
        assert not any("plain form" in ln for ln in t.lines())


def _finished_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    freeze(run)
    write_log(run / "train_log.jsonl")
    return run


def test_replay_piped_is_its_plain_form_with_its_code(tmp_path):
    run = _finished_run(tmp_path)
    plain = cli(tmp_path, "replay", str(run), "--plain")
    piped = cli(tmp_path, "replay", str(run))
    assert piped.returncode == plain.returncode == EXIT_CODES["AMBIGUOUS"], piped.stderr
    assert piped.stdout == plain.stdout
    assert piped.stderr == note("stdout is not a terminal") + "\n"


def test_attach_piped_is_its_plain_form_with_its_code(tmp_path):
    run = _finished_run(tmp_path)
    plain = cli(tmp_path, "attach", str(run), "--until-end", "--plain")
    piped = cli(tmp_path, "attach", str(run), "--until-end")
    assert piped.returncode == plain.returncode, piped.stderr
    verdicts = [ln for ln in piped.stdout.splitlines() if ln.startswith("verdict: ")]
    assert verdicts and verdicts[-1] in plain.stdout.splitlines()
    assert piped.stderr.splitlines().count(note("stdout is not a terminal")) == 1


def test_attach_keeps_quiet_end_for_plain_only_even_when_piped(tmp_path):
    """Whether the command line is right does not hang on where its output goes."""
    run = _finished_run(tmp_path)
    res = cli(tmp_path, "attach", str(run), "--quiet-end", "1")
    assert res.returncode == 2 and "--quiet-end: only with --plain" in res.stderr
    assert note("stdout is not a terminal") not in res.stderr


def test_launch_piped_follows_as_plain_to_the_verdict(tmp_path):
    preset = command_preset(tmp_path, ARGV)
    res = cli(tmp_path, "launch", str(preset))
    assert res.returncode == EXIT_CODES["HEALTHY"], res.stdout + res.stderr
    assert res.stderr.splitlines().count(note("stdout is not a terminal")) == 1, res.stderr
    lines = res.stdout.splitlines()
    assert any(ln.startswith("VERDICT: HEALTHY  [final]  raw rule at step 40") for ln in lines)
    assert lines[-1].startswith("verdict.json written to ")
    # the run it launched, followed to its end: its folder holds its log and its verdict
    run = tmp_path / "runs" / "fake"
    assert (run / "prereg.json").is_file() and (run / "verdict.json").is_file()


def test_launch_detach_piped_says_nothing_of_the_plain_form(tmp_path):
    preset = command_preset(tmp_path, ARGV)
    res = cli(tmp_path, "launch", str(preset), "--detach")
    assert res.returncode == 0, res.stderr
    assert "plain form" not in res.stderr


def test_a_reader_that_stops_reading_is_not_told_the_run_is_healthy(tmp_path):
    """`replay ... | head -1`: the reader goes before the report is out. Exit 0 would read as
    HEALTHY whatever the run's read; it is 141, the shell's code for a cut pipe, and no
    traceback."""
    run = _finished_run(tmp_path)
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "fontaine_tui", "replay", str(run / "train_log.jsonl")]
            + ["--plain", "--preset", "demosonly_1gpu", *FAST],
            stdout=write,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)
    assert proc.returncode == 141, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
