"""Whether the engine's interpreter finds what the engine imports, asked before a launch.

`pip install -e .` installs the console alone; the engine's modules (pyproject's `engine`
extra: torch, transformers, ...) come with `pip install -e '.[engine]'`, run by the engine's
own python. Without them an
engine launch would freeze prereg.json, make the run folder and start an engine that dies on
`No module named 'torch'` there. start_guard.check_engine asks first, in the interpreter, the
environment and the folder the engine gets, and a launch here is refused in one line naming
what is missing and the command that installs it.

Each module is looked up (importlib.util.find_spec), never imported: importing torch and
transformers takes seconds, the lookup a fraction of one."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path

from fontaine_tui.core.childenv import child_env
from fontaine_tui.core.enginename import ENGINE_MODULE
from fontaine_tui.core.text import literal

# the modules of pyproject's `engine` extra, each under the name it imports as
ENGINE_IMPORTS = ("torch", "transformers", "safetensors", "numpy", "pyarrow", "av")
LOOKUP_S = 30.0  # the lookup's bound: a python that hangs only leaves the check unanswered
# run by the engine's interpreter: the names it cannot find, on its last line. A name found
# with no file behind it is a namespace package: an empty torch/ left by an uninstall, or a
# folder of that name on the path, which the engine would fail to import from
_FIND = (
    "import importlib.util as u, sys\n"
    "def found(m):\n"
    "    s = u.find_spec(m)\n"
    "    return s is not None and s.has_location\n"
    "print('missing:', *(m for m in sys.argv[1:] if not found(m)))"
)


def install_command(python: str) -> str:
    """The command that installs the engine's dependencies for `python`.

    It is that interpreter's own pip, not whichever comes first on PATH, beside this copy of
    the console (a checkout: its folder)."""
    root = Path(__file__).resolve().parents[3]
    pip = f"{shlex.quote(python)} -m pip install"
    if (root / "pyproject.toml").is_file() and (root / "engine" / "cli.py").is_file():
        return literal(f"cd {shlex.quote(str(root))} && {pip} -e '.[engine]'")  # a checkout
    return literal(f"{pip} 'fontaine-tui[engine]'")


def _missing(python: str, env: Mapping[str, str] | None) -> tuple[list[str] | None, str]:
    """(the modules `python` does not find, ""), or (None, why it could not be asked)."""
    try:
        res = subprocess.run(
            [python, "-c", _FIND, ENGINE_MODULE, *ENGINE_IMPORTS],
            capture_output=True,
            text=True,
            timeout=LOOKUP_S,
            stdin=subprocess.DEVNULL,
            env=child_env(env),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return None, str(why)
    said = (res.stdout.strip().splitlines() or [""])[-1].split()
    if res.returncode != 0 or said[:1] != ["missing:"]:
        return None, (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
    return said[1:], ""


def engine_deps(
    python: str, env: Mapping[str, str] | None = None, on_node: bool = False
) -> tuple[str, str]:
    """(level, message): whether `python` finds the engine and every module it imports.

    `env` is the engine's environment before child_env (None: this process's, as the engine
    maker gives it); the lookup runs in this process's folder, where the engine starts. A
    module missing is "refuse". `on_node`: the engine runs this interpreter on another machine
    (a Slurm node), which may have what this one lacks: "warn" instead. A python that cannot
    be asked is "warn", the launch going on as before the check."""
    what = f"the engine's python {literal(python)}"
    lacking, why = _missing(python, env)
    if lacking is None:
        return "warn", f"cannot check {what}: {literal(why)}"
    missing = ", ".join(lacking)
    if not missing:
        return "ok", f"{what} finds {ENGINE_MODULE}, {', '.join(ENGINE_IMPORTS)}"
    lacks = (
        f"{what} finds no {missing}{' here' if on_node else ''} (the engine's dependencies, "
        "not installed with the console alone)"
    )
    if on_node:
        return "warn", (
            f"{lacks}; the Slurm job runs it on its node, which must have them (to install "
            f"them: {install_command(python)})"
        )
    return "refuse", f"{lacks}; install them: {install_command(python)}"
