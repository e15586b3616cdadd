"""The command line imports only the sub-command it runs: `fontaine-tui --help` lists every
command without importing one, and no help loads Textual or torch."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

from fontaine_tui import commands
from fontaine_tui.cli import COMMANDS, build_parser

PROBE = (
    "import io, json, sys, contextlib\n"
    "from fontaine_tui.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()) as out: code = main(sys.argv[1:])\n"
    "print(json.dumps({'code': code, 'help': out.getvalue(), 'modules': sorted(sys.modules)}))\n"
)


def _loaded(*argv: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize(
    "argv, chosen", [(["--help"], set()), (["verdict", "--help"], {"verdict"})], ids=" ".join
)
def test_a_help_imports_no_other_command_nor_textual_nor_torch(argv, chosen):
    seen = _loaded(*argv)
    assert seen["code"] == 0 and "examples:" in seen["help"]
    prefix = f"{commands.__name__}."
    loaded = {m[len(prefix) :] for m in seen["modules"] if m.startswith(prefix)}
    assert loaded - {"_args"} == chosen
    heavy = {m.split(".")[0] for m in seen["modules"]} & {"textual", "torch", "transformers"}
    assert not heavy


def test_every_command_module_is_in_the_table():
    modules = {m.name for m in pkgutil.iter_modules(commands.__path__)}
    assert {c.module for c in COMMANDS} == {m for m in modules if not m.startswith("_")}


def test_the_top_help_lists_every_command_as_the_whole_parser_does():
    assert build_parser(()).format_help() == build_parser().format_help()


@pytest.mark.parametrize("name", [c.name for c in COMMANDS])
def test_a_command_parsed_alone_is_the_same_as_with_every_command(name):
    def sub_help(parser):
        (action,) = [a for a in parser._actions if a.dest == "command"]
        return action.choices[name].format_help()

    assert sub_help(build_parser((name,))) == sub_help(build_parser())
