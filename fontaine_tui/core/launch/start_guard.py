"""Whether what a launch starts is there: the engine and its init, or a preset's [command].

The engine's interpreter must find the engine's modules, and recipe.init a starting point; a
[command]'s folder, program, script and launcher block must be there and right, and on
--resume what changed under it since launch is said."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

from fontaine_tui.core.launch.enginedeps import engine_deps
from fontaine_tui.core.launch.findings import Finding
from fontaine_tui.core.preset.command import CommandSpec
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run.logtail import CHECKPOINT_DIR
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.text import literal


def init_found(path: Path) -> bool:
    """Whether `path` holds something the engine can start from.

    engine/init.py has the full rules. It is a Hugging Face model folder (config.json, or
    vision/ and backbone/ ones), an engine checkpoint (model.safetensors + meta.json), or a run
    or checkpoints folder with a complete step-NNNNNN checkpoint."""
    if not path.is_dir():
        return False
    return _model_folder(path) or any(_checkpoint_in(f) for f in (path, path / "checkpoints"))


def _model_folder(path: Path) -> bool:
    """A Hugging Face model folder: config.json there, or in its vision/ or backbone/."""
    return any((path / part / "config.json").is_file() for part in ("", "vision", "backbone"))


def _checkpoint_in(folder: Path) -> bool:
    """An engine checkpoint (model.safetensors + meta.json), or a complete step-NNNNNN one."""
    if (folder / "model.safetensors").is_file() and (folder / "meta.json").is_file():
        return True
    return folder.is_dir() and any(
        CHECKPOINT_DIR.match(p.name) and (p / "meta.json").is_file() for p in folder.iterdir()
    )


def check_engine(python: str = sys.executable, on_node: bool = False) -> list[Finding]:
    """Check that the engine's interpreter finds the engine and the modules it imports.

    `python` is the one engine_argv.build_argv starts the engine with (this one), asked with
    the engine maker's environment and folder (this process's), so a console installed
    without the engine's extra is refused before anything is written (core/launch/enginedeps).
    `on_node`: the interpreter runs on a Slurm node, where a missing module is a warning."""
    level, message = engine_deps(python, on_node=on_node)
    return [Finding("engine", level, message)]


def check_init(preset: Preset, cwd: Path | None = None) -> list[Finding]:
    """Check that recipe.init names a starting point that is there.

    The path is relative to the current folder, as the engine reads it. Where it is another
    preset's run folder, the refusal names the launch that makes it."""
    init = str(preset.recipe.get("init", ""))
    if not init:
        return []
    path = Path(init) if Path(init).is_absolute() else (cwd or Path.cwd()) / init
    if init_found(path):
        return [Finding("init", "ok", f"init {init}: found")]
    makers = _makers(preset, init)
    hint = (
        (
            f"; it is the run folder of preset {makers[0]}: run `fontaine-tui launch "
            f"{makers[0]}` from this folder first"
        )
        if makers
        else ""
    )
    return [
        Finding(
            "init",
            "refuse",
            f"recipe.init {init}: no engine checkpoint or Hugging "
            f"Face model folder at {path}{hint}",
        )
    ]


def _makers(preset: Preset, init: str) -> list[str]:
    """The other presets found whose run folder (run.output_dir) is `init`.

    A preset that does not load says nothing here."""
    from fontaine_tui.core.preset.find import list_presets, load_preset

    makers = []
    for name, preset_path in list_presets().items():
        try:
            other = load_preset(str(preset_path))
        except Exception:  # noqa: BLE001 - a broken preset elsewhere says nothing here
            continue
        if other.name != preset.name and Path(str(other.run["output_dir"])) == Path(init):
            makers.append(name)
    return makers


def check_command(
    preset: Preset, folder: RunFolder, resume: bool, cwd: Path | None = None
) -> list[Finding]:
    """Check a [command] preset's launch.

    Its folder, program, script and launcher block must be there and right (refused
    otherwise). On --resume, each change since launch to the files it names or to its code is a
    warning, as the engine's own code change is (the run goes on, the change said)."""
    if preset.command is None:
        return []
    from fontaine_tui.core.errors import InputError
    from fontaine_tui.core.launch import command

    spec = preset.command
    try:
        where = command.command_cwd(preset, cwd or Path.cwd())
        argv = command.command_argv(preset, folder.root, resume, where)
    except InputError as exc:
        return [Finding("command", "refuse", str(exc))]
    if missing := _not_there(preset, folder, argv[0], where, resume):
        return [Finding("command", "refuse", f"{preset.path}: {missing}")]
    out = [
        Finding("command", "ok", f"command: {literal(shlex.join(argv))} in {literal(str(where))}")
    ]
    if spec.block_reference:
        try:
            out.append(_block_matches(spec, where))
        except InputError as exc:
            return [Finding("command", "refuse", str(exc))]
    if resume and folder.prereg.exists():
        out += _code_changes(preset, folder, argv, where)
    return out


def _block_matches(spec: CommandSpec, where: Path) -> Finding:
    """The launcher's block, the same as its reference's, and the size of the delta above it.

    An InputError (one line) where the block differs or a line above it execs."""
    from fontaine_tui.core.launch import command

    delta = command.check_block(
        where / spec.script, where / spec.block_reference, spec.block_marker
    )
    changed = sum(ln.startswith(("+", "-")) for ln in delta[2:])
    return Finding(
        "command",
        "ok",
        f"command block matches {literal(spec.block_reference)}; platform delta: {changed} line(s)",
    )


def _not_there(preset: Preset, folder: RunFolder, program: str, where: Path, resume: bool) -> str:
    """A [command]'s program or script that is not there, as its refusal says it ("" if none).

    The program is looked up on the PATH the command is given, or as a path in its folder; the
    scripts its argv (on `resume`, resume_argv) names, in its folder."""
    from fontaine_tui.core.launch import command

    assert preset.command is not None
    env_path = command.command_env(preset, folder.root).get("PATH", os.defpath)
    if not shutil.which(program, path=env_path) and not (
        os.sep in program and shutil.which(str(where / program))
    ):
        return f"command: program {literal(program)!r} not found (PATH, or {literal(str(where))})"
    script = preset.command.script
    if script and not command.file_record(where / script):
        return f"command.script: no file {literal(str(where / script))}"
    return _argv_file_missing(preset.command, resume, where)


def _argv_file_missing(spec: CommandSpec, resume: bool, where: Path) -> str:
    """The interpreter's script in the argv in use where it is not there, as its refusal says it.

    Relative names are read against the command's cwd (`where`), as the command reads them."""
    from fontaine_tui.core.launch import command

    key, argv = ("resume_argv", spec.resume_argv) if resume else ("argv", spec.argv)
    for i in command.script_args(argv):
        path = Path(argv[i]) if Path(argv[i]).is_absolute() else where / argv[i]
        if not (command.file_record(path) or _is_dir(path)):  # a folder: its __main__.py
            return (
                f"command.{key}[{i}]: no file or folder {literal(str(path))} "
                "(read against command.cwd)"
            )
    return ""


def _is_dir(path: Path) -> bool:
    """Path.is_dir, False for a name the system refuses (over NAME_MAX, a NUL, ...)."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _code_changes(preset: Preset, folder: RunFolder, argv: list[str], where: Path) -> list[Finding]:
    """On --resume, each change since launch to the [command]'s files or code, as a warning."""
    from fontaine_tui.core.errors import InputError
    from fontaine_tui.core.launch import command
    from fontaine_tui.core.verdict.prereg import read_prereg

    try:
        frozen = read_prereg(folder).provenance
    except InputError:
        return []  # check_folder refuses it
    return [
        Finding("code", "warn", f"--resume: {change}")
        for change in command.code_changes(frozen, preset, argv, where, folder.root)
    ]
