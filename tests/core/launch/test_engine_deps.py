"""A launch on a console installed without the engine's extra (`pip install -e .`).

The engine runs in this program's interpreter; where that one finds no torch, an engine launch
is refused in one line naming what is missing and how to install it, before prereg.json is
frozen or the run folder made. A preset's own [command] is not the engine's: it launches. A
Slurm job runs the interpreter on its node, which may have what this machine lacks: a warning.
Another host's launch (`--on HOST`) is that host's own fontaine-tui, guarded there.

The interpreter without torch is a real one: a venv made in the test, without pip and without
this one's site-packages, that reaches the console's own dependencies (and the checkout)
through PYTHONPATH only."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

from fontaine_tui.core.launch.enginedeps import ENGINE_IMPORTS, engine_deps

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[3]
ENGINE_ONLY = ("torch", "functorch", "transformers")  # what `pip install -e .` does not install


def install(python: Path | str) -> str:
    """The install command the refusal names: the engine python's own pip, in the checkout."""
    return f"cd {ROOT} && {python} -m pip install -e '.[engine]'"


def console_only(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A python with the console's dependencies and the checkout, but no torch or transformers.

    Its site-packages is a folder of links to this interpreter's, less the engine's packages."""
    venv = tmp_path / "console-only"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60
    )
    site = tmp_path / "site"
    site.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.lower().startswith(ENGINE_ONLY):
            (site / entry.name).symlink_to(entry)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(ROOT), str(site)))}
    env.pop("FONTAINE_NOTIFY", None)
    python = venv / "bin" / "python"
    lacks = subprocess.run(
        [str(python), "-c", "import torch"], env=env, capture_output=True, text=True, timeout=60
    )
    assert "No module named 'torch'" in lacks.stderr, lacks.stderr  # the setup holds
    return python, env


def cli(python: Path, env: dict[str, str], cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), "-m", "fontaine_tui", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_engine_imports_are_the_engine_extra() -> None:
    """ENGINE_IMPORTS, the modules the guard looks for, are pyproject's `engine` extra."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["engine"]
    names = set()
    for req in extra:
        match = re.match(r"[A-Za-z0-9_.-]+", req)
        assert match is not None, req
        names.add(match.group(0).lower())
    assert names == set(ENGINE_IMPORTS)


def test_the_lookup_names_what_the_engine_python_lacks(tmp_path: Path) -> None:
    python, env = console_only(tmp_path)
    level, message = engine_deps(str(python), env)
    assert level == "refuse", message
    assert f"the engine's python {python} finds no torch, transformers (" in message
    assert message.endswith(f"install them: {install(python)}")
    assert "numpy" not in message  # the console's environment has it
    # on a Slurm node the same interpreter may have them: said, not refused
    level, message = engine_deps(str(python), env, on_node=True)
    assert level == "warn" and "finds no torch, transformers" in message, message
    # this interpreter has the engine: nothing to refuse
    level, message = engine_deps(sys.executable)
    assert level == "ok", message
    # a python that cannot be asked leaves the launch to go on, said
    level, message = engine_deps(str(tmp_path / "no-python"))
    assert level == "warn" and message.startswith("cannot check the engine's python"), message


def test_an_empty_torch_folder_left_behind_is_not_torch(tmp_path: Path) -> None:
    """`pip uninstall torch` can leave an empty torch/ in site-packages, and a folder named
    torch on the path reads as a namespace package: found, yet nothing to import from. The
    engine died on `No module named 'torch.distributed'` after its run folder was written."""
    python, env = console_only(tmp_path)
    (tmp_path / "site" / "torch" / "lib").mkdir(parents=True)
    assert (
        subprocess.run(
            [str(python), "-c", "import torch"], env=env, capture_output=True, timeout=60
        ).returncode
        == 0
    )  # the leftover imports as a package
    level, message = engine_deps(str(python), env)
    assert level == "refuse" and "finds no torch, transformers (" in message, message


def test_the_lookup_imports_nothing(tmp_path: Path) -> None:
    """Each module is looked up, not imported (importing torch takes seconds).

    Modules planted ahead of the real ones say when they are imported."""
    planted = tmp_path / "planted"
    planted.mkdir()
    said = tmp_path / "imported"
    for name in ENGINE_IMPORTS:
        (planted / f"{name}.py").write_text(f"open({str(said)!r}, 'a').write({name!r})\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(planted), str(ROOT)))}
    level, message = engine_deps(sys.executable, env)
    assert level == "ok", message
    assert not said.exists(), said.read_text()


def test_an_engine_launch_without_the_engine_refuses_and_writes_nothing(
    tmp_path: Path, registry_path: Path
) -> None:
    python, env = console_only(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    res = cli(python, env, work, "launch", "smoke", "--detach", "--output-dir", "run")
    assert res.returncode == 2, res.stdout + res.stderr
    [line] = res.stderr.strip().splitlines()
    assert line.startswith("fontaine-tui: error: refusing to launch: the engine's python ")
    assert "finds no torch, transformers (" in line and line.endswith(install(python)), line
    assert res.stdout == ""
    assert list(work.iterdir()) == []  # no run folder, no prereg.json
    assert not registry_path.exists()  # no registry entry


def test_a_command_preset_launches_without_the_engine(tmp_path: Path, registry_path: Path) -> None:
    """A [command] preset runs the user's own trainer: the engine's modules are not asked for."""
    python, env = console_only(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text("print('trained')\n")
    (work / "own.toml").write_text(
        '[run]\nname = "own"\noutput_dir = "runs/own"\n[command]\n'
        'argv = ["python", "train.py", "--output_dir", "{output_dir}"]\n'
        '[source]\nkind = "hf_trainer"\n[verdict]\nmetric = "eval_loss"\nanchor_step = 10\n'
        "endpoint_step = 20\nhealthy_max = 0.0\ndrift_min = 0.2\n"
    )
    res = cli(python, env, work, "launch", "own.toml", "--detach")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "launched own" in res.stdout and "engine" not in res.stderr, res.stdout + res.stderr
    assert (work / "runs" / "own" / "prereg.json").is_file()


CHECKS = """
import sys
from pathlib import Path
from fontaine_tui.core.runs.registry import Registry
from fontaine_tui.core.launch.targets.base import Request
from fontaine_tui.core.launch.targets.slurm import SlurmTarget
from fontaine_tui.core.launch.targets.ssh import SshHostTarget
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder

req = Request(load_preset("smoke"), Registry())
folder = RunFolder(Path(sys.argv[1]))
for name, target in (("slurm", SlurmTarget("debug")), ("ssh", SshHostTarget("gpu1", "gpu1"))):
    for f in target.check(req, folder):
        print(name, f.check, f.level, sep="\\t")
"""


def test_slurm_and_another_host_are_not_refused_for_this_machines_python(
    tmp_path: Path, registry_path: Path
) -> None:
    """The targets' own checks, run in the interpreter without torch.

    A Slurm job runs it on a node: the missing modules are a warning. `--on HOST` checks
    nothing here: that host's fontaine-tui runs its guards with its own python."""
    python, env = console_only(tmp_path)
    res = subprocess.run(
        [str(python), "-c", CHECKS, str(tmp_path / "run")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    rows = [line.split("\t") for line in res.stdout.splitlines()]
    assert ["slurm", "engine", "warn"] in rows, rows
    assert not [r for r in rows if r[2] == "refuse"], rows
    assert not [r for r in rows if r[0] == "ssh"], rows
