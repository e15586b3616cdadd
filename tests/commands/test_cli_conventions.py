"""The command line's conventions (as gh, kubectl and uv have them): every command's --help
ends with examples, --ssh-config is one global option (still taken after the command), and
-p / -j are --preset / --json wherever those exist."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.cli import build_parser, main

ROOT = Path(__file__).parents[2]


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every registered command and sub-command, as (argv prefix, its parser)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _commands(sub, (*path, name))


COMMANDS = sorted(_commands(build_parser()), key=lambda c: c[0])


def test_the_commands_are_all_found():
    names = {path for path, _ in COMMANDS}
    assert {("verdict",), ("bank",), ("bank", "add"), ("notify", "test")} <= names
    assert len(names) >= 16


@pytest.mark.parametrize("path", [path for path, _ in COMMANDS], ids=" ".join)
def test_every_help_has_examples_that_keep_their_lines(path, capsys):
    assert main([*path, "--help"]) == 0
    out = capsys.readouterr().out
    assert "\nexamples:\n" in out, out
    lines = out.split("\nexamples:\n")[1].split("\n\n")[0].splitlines()
    assert 2 <= len(lines) <= 4, lines
    assert all(
        line.startswith(f"  fontaine-tui {path[0]}")
        or line.startswith(f"  FONTAINE_BANK=/shared/bank fontaine-tui {path[0]}")
        or line.startswith(f"  fontaine-tui --ssh-config ~/.ssh/lab {path[0]}")
        for line in lines
    ), lines


def test_the_examples_parse():
    """Each example line is a command line this parser takes."""
    import shlex

    parser = build_parser()
    for sub in [parser, *(sub for _, sub in COMMANDS)]:
        for line in sub.epilog.split("examples:\n")[1].split("\n\n")[0].splitlines():
            argv = shlex.split(line.split("|")[0].split(">")[0])
            argv = argv[argv.index("fontaine-tui") + 1 :]
            if argv == ["COMMAND", "--help"]:
                continue
            parser.parse_args(argv)  # a usage error exits 2: SystemExit fails the test


def test_the_top_help_has_examples(capsys):
    assert main(["--help"]) == 0
    assert "\nexamples:\n  fontaine-tui demo\n" in capsys.readouterr().out


def _unit(*argv: str, cwd: Path) -> str:
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv, "--print-unit"],
        capture_output=True,
        text=True,
        cwd=cwd,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_ssh_config_is_a_global_option_still_taken_after_the_command(tmp_path):
    before = _unit("--ssh-config", "lab.conf", "babysit", cwd=tmp_path)
    after = _unit("babysit", "--ssh-config", "lab.conf", cwd=tmp_path)
    assert f'"--ssh-config" "{tmp_path / "lab.conf"}"' in before
    assert before == after
    both = _unit("--ssh-config", "a.conf", "babysit", "--ssh-config", "b.conf", cwd=tmp_path)
    assert f'"{tmp_path / "b.conf"}"' in both and "a.conf" not in both  # the nearer one


@pytest.mark.parametrize(
    "argv",
    [
        ["attach", "h:/r"],
        ["runs"],
        ["stop", "r7"],
        ["launch", "p", "--on", "h"],
        ["bank", "add", "r", "--as", "n"],
    ],
)
def test_every_ssh_command_reads_the_global_ssh_config(argv):
    parser = build_parser()
    assert parser.parse_args(["--ssh-config", "g", *argv]).ssh_config == "g"
    assert parser.parse_args([*argv, "--ssh-config", "s"]).ssh_config == "s"
    assert parser.parse_args(argv).ssh_config is None


def test_short_flags_mean_the_same_everywhere_and_never_clash():
    short = {"-p": "--preset", "-j": "--json"}
    seen = set()
    for path, sub in COMMANDS:
        flags = [s for a in sub._actions for s in a.option_strings]
        assert len(flags) == len(set(flags)), (path, flags)
        for action in sub._actions:
            longs = [s for s in action.option_strings if s.startswith("--")]
            for flag, long in short.items():
                if long in longs:
                    assert flag in action.option_strings, (path, long)
                    seen.add((path, flag))
                elif flag in action.option_strings:
                    pytest.fail(f"{' '.join(path)}: {flag} is not {long}")
    assert {
        (("verdict",), "-p"),
        (("verdict",), "-j"),
        (("bank", "add"), "-p"),
        (("bank", "show"), "-j"),
        (("runs",), "-j"),
    } <= seen


def test_short_flags_work(tmp_path, capsys):
    args = build_parser().parse_args(["verdict", "r7", "-p", "mine", "-j"])
    assert (args.preset, args.json) == ("mine", True)
    assert main(["verdict", str(tmp_path / "none"), "-p", "nothing", "-j"]) == 2
    assert "nothing: name: no such preset" in capsys.readouterr().err  # -p read as --preset
