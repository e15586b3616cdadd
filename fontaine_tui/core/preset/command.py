"""A preset's [command]: the user's own training command, started instead of the engine.

    [command]
    argv = ["python", "train.py", "--output_dir", "{output_dir}"]  # {output_dir}: the run folder
    cwd = "."                    # where it runs, against where launch is called (default ".")
    env = { TOKENIZERS_PARALLELISM = "false" }   # frozen into prereg.json; never secrets
    resume_argv = ["python", "train.py", "--output_dir", "{output_dir}",
                   "--resume_from_checkpoint", "true"]             # what --resume runs
    script = "scripts/launch_box.sh"     # instead of argv: run as `bash SCRIPT`
    block_reference = "box_launcher.sh"  # with script: the frozen reference launcher
    block_marker = "# ---- command block ----"

Exactly one of argv and script. `{output_dir}` is the one placeholder (in argv, resume_argv,
env values and the preset's [source] path; `{{` and `}}` write a brace), and resume_argv may
name `{endpoint}` too: the
endpoint in force when it resumes (the verdict's endpoint_step, moved by applied extends), so
the trainer trains to the step the verdict reads. A script gets no arguments: it reads the run
folder from FONTAINE_OUTPUT_DIR, which every command's environment holds. resume_argv is a
whole command line in both cases (it may run the script itself). Relative paths (script,
block_reference, files named in argv) are read against the command's cwd.
"""

from __future__ import annotations

import posixpath
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from fontaine_tui.core.preset.checks import PresetError, check_keys
from fontaine_tui.core.secrets import env_secret, mask_argv

PLACEHOLDER = "output_dir"
ENDPOINT = "endpoint"  # resume_argv only: the endpoint in force when the run resumes
OUTPUT_ENV = "FONTAINE_OUTPUT_DIR"  # the run folder, in every command's environment
KEYS = ("argv", "cwd", "env", "resume_argv", "script", "block_reference", "block_marker")
SECRET_HINT = (
    "env is frozen into prereg.json and shown; keep secrets in the launching shell's environment"
)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """A [command] table, checked. Empty strings and tuples are keys left out."""

    argv: tuple[str, ...] = ()
    cwd: str = ""
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    resume_argv: tuple[str, ...] = ()
    script: str = ""
    block_reference: str = ""
    block_marker: str = ""

    def canonical(self) -> dict[str, object]:
        """As hashed into the preset: only the keys set."""
        out: dict[str, object] = {}
        for key in KEYS:
            value = getattr(self, key)
            if value:
                out[key] = (
                    list(value)
                    if isinstance(value, tuple)
                    else dict(sorted(value.items()))
                    if isinstance(value, Mapping)
                    else value
                )
        return out


def substitute(text: str, output_dir: str, endpoint: int | None = None) -> str:
    """`text` with {output_dir} (and in resume_argv {endpoint}) replaced, {{ }} as braces.

    read_command (and check_source_path) checked that no other placeholder is there."""
    if endpoint is None:
        return text.format(**{PLACEHOLDER: output_dir})
    return text.format(**{PLACEHOLDER: output_dir, ENDPOINT: str(endpoint)})


def check_source_path(path: object, where: str | Path, launched: bool) -> None:
    """A preset's [source] path: {output_dir} its one placeholder where a [command] is `launched`.

    The launch fills it in as it fills argv's (`substitute`) and freezes the path read. A preset
    without [command] reads its path as written, but {output_dir} there is refused: no launch
    fills it in (the path is read against the run folder already)."""
    if not isinstance(path, str):
        return  # read_spec says what a path is
    if launched:
        _placeholders(path, "source.path", where)
        _inside_output_dir(path, where)
    elif "{" + PLACEHOLDER + "}" in path:
        raise PresetError(
            where,
            "source.path",
            "expected {output_dir} only with a [command] (the run folder it is launched "
            "into); without one, the path is read against the run folder already: leave it out",
        )


def _inside_output_dir(path: str, where: str | Path) -> None:
    """A path that starts with {output_dir} stays in the run folder once `..` is resolved.

    {output_dir} names the run folder: `{output_dir}/../other/...` reads another run's log, and
    a path outside the run folder is taken for a shared store the stale-log guard does not
    check, so a trainer that dies at once would be judged by that other run's log."""
    if not path.startswith("{" + PLACEHOLDER + "}"):
        return
    root = "/" + PLACEHOLDER  # any absolute folder: only the path's own `..` can leave it
    filled = posixpath.normpath(substitute(path, root))
    if filled != root and not filled.startswith(root + "/"):
        raise PresetError(
            where,
            "source.path",
            f"expected a path inside the run folder after {{output_dir}}, got {path!r} "
            "(`..` leaves it; name another folder's log without {output_dir})",
        )


def names_endpoint(argv: tuple[str, ...]) -> bool:
    """Whether an argv (resume_argv, checked by read_command) names {endpoint}."""
    return any(name == ENDPOINT for arg in argv for _, name, _, _ in string.Formatter().parse(arg))


def read_command(table: object, where: str | Path) -> CommandSpec:
    """A preset's [command] table; PresetError (file, key, what was expected) on a bad one."""
    table = check_keys(where, "command", table, KEYS)
    if ("argv" in table) == ("script" in table):
        raise PresetError(
            where,
            "command",
            "expected exactly one of argv (the command line) "
            "and script (a launcher script run with bash)",
        )
    argv = _argv(table, "argv", where)
    resume = _argv(table, "resume_argv", where)
    texts = {
        key: _text(table, key, where)
        for key in ("cwd", "script", "block_reference", "block_marker")
    }
    _check_block(table, texts["block_marker"], where)
    return CommandSpec(
        argv=argv,
        cwd=texts["cwd"],
        env=_env(table.get("env", {}), where),
        resume_argv=resume,
        script=texts["script"],
        block_reference=texts["block_reference"],
        block_marker=texts["block_marker"],
    )


def _check_block(table: dict, marker: str, where: str | Path) -> None:
    """Check the script's checked block: its keys only with script, both or neither.

    block_reference and block_marker come together, only beside script; the marker is one
    line."""
    for key in ("block_reference", "block_marker"):
        if key in table and "script" not in table:
            raise PresetError(
                where,
                f"command.{key}",
                "expected only with script (the block "
                "below the marker in the script is checked against the reference)",
            )
    if ("block_reference" in table) != ("block_marker" in table):
        missing = "block_marker" if "block_reference" in table else "block_reference"
        raise PresetError(
            where,
            f"command.{missing}",
            "missing; expected both block_reference and block_marker, or neither",
        )
    if "\n" in marker or "\r" in marker:
        raise PresetError(where, "command.block_marker", "expected one line")


def _argv(table: dict, key: str, where: str | Path) -> tuple[str, ...]:
    if key not in table:
        return ()
    value = table[key]
    if not (isinstance(value, list) and value and all(isinstance(a, str) for a in value)):
        raise PresetError(
            where,
            f"command.{key}",
            "expected a non-empty list of strings "
            '(["python", "train.py", "--output_dir", "{output_dir}"])',
        )
    if not value[0]:
        raise PresetError(where, f"command.{key}[0]", "expected the program, got an empty string")
    # what the secrets policy masks in this argv, in any form (core/secrets.py)
    secret = [a != b for a, b in zip(value, mask_argv(value), strict=True)]
    for i, arg in enumerate(value):
        _check_arg(arg, f"command.{key}[{i}]", where, key == "resume_argv", secret[i])
    return tuple(value)


def _check_arg(arg: str, key: str, where: str | Path, resume: bool, secret: bool) -> None:
    """One argument of an argv (`key` names it): no NUL, known placeholders, no secret.

    A resume_argv's (`resume`) may also name the endpoint placeholder."""
    if "\0" in arg:
        raise PresetError(where, key, "expected a string without a NUL character")
    _placeholders(arg, key, where, (PLACEHOLDER, ENDPOINT) if resume else (PLACEHOLDER,))
    if secret:
        raise PresetError(
            where,
            key,
            "looks like a secret; the "
            "command is frozen into prereg.json and shown: let the "
            "trainer read it from the launching shell's environment",
        )


def _text(table: dict, key: str, where: str | Path) -> str:
    if key not in table:
        return ""
    value = table[key]
    if not isinstance(value, str) or not value:
        raise PresetError(where, f"command.{key}", "expected a non-empty string")
    if "\0" in value:
        raise PresetError(where, f"command.{key}", "expected a string without a NUL character")
    return value


def _env(value: object, where: str | Path) -> Mapping[str, str]:
    if not isinstance(value, dict):
        raise PresetError(
            where,
            "command.env",
            'expected a table of strings ({ TOKENIZERS_PARALLELISM = "false" })',
        )
    for name, text in value.items():
        key = f"command.env.{name}"
        if not ENV_NAME.fullmatch(name):
            raise PresetError(where, key, "expected a variable name (letters, digits, _)")
        if not isinstance(text, str):
            raise PresetError(where, key, "expected a string")
        if env_secret(name, text):
            raise PresetError(where, key, f"looks like a secret; {SECRET_HINT}")
        if name == OUTPUT_ENV:
            raise PresetError(where, key, "is set by the launch (the run folder); remove it")
        if "\0" in text:
            raise PresetError(where, key, "expected a string without a NUL character")
        _placeholders(text, key, where)
    return MappingProxyType(dict(sorted(value.items())))


def _placeholders(
    text: str, key: str, where: str | Path, names: tuple[str, ...] = (PLACEHOLDER,)
) -> None:
    """{output_dir} (and in resume_argv {endpoint}) only; any other {...} or lone brace refused."""
    expected = (
        "{output_dir} as the only placeholder"
        if names == (PLACEHOLDER,)
        else "{output_dir} and {endpoint} as the only placeholders"
    )
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise PresetError(
            where,
            key,
            f"expected {expected} ({exc}; write {{{{ or }}}} for a brace)",
        ) from None
    for _, name, spec, conversion in parts:
        if name is not None and (name not in names or spec or conversion):
            shown = _field_text(name, spec, conversion)
            raise PresetError(
                where,
                key,
                f"expected {expected}, got {shown} (write {{{{ or }}}} for a brace)",
            )


def _field_text(name: str, spec: str | None, conversion: str | None) -> str:
    """A replacement field as it was written: {name!conversion:spec}."""
    return (
        "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
    )
