"""Per-host launch settings: `[hosts.NAME]` in the user's config.toml.

```toml
[hosts.gpu-box]                       # NAME as ssh knows it (~/.ssh/config: aliases, ProxyJump)
project = "/srv/fontaine"            # the remote folder `launch` runs in (its presets/, outputs/)
python = "/srv/venv/bin/python"      # the remote interpreter with fontaine-tui and the engine
env = { HF_HOME = "/scratch/hf" }    # set for the remote launch and stop
```

A host without a table is used with the defaults: the remote login's home folder and
`python3`. The connection itself (user, port, keys, jump hosts, ControlMaster) is OpenSSH's.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fontaine_tui.core import tomlfile
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.readfile import read_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KEYS = ("project", "python", "env")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class HostSettings:
    name: str
    project: str = "."  # "." : the remote login's home folder
    python: str = "python3"
    env: Mapping[str, str] = field(default_factory=dict)


def parse_hosts(data: Mapping[str, Any], path: Path | str) -> dict[str, HostSettings]:
    tables = data.get("hosts", {})
    if not isinstance(tables, dict):
        raise InputError(f"{path}: hosts: expected [hosts.NAME] tables")
    return {name: _host(name, table, f"{path}: hosts.{name}") for name, table in tables.items()}


def _host(name: str, table: object, where: str) -> HostSettings:
    """One [hosts.NAME] table, its keys checked in turn."""
    if not isinstance(table, dict):
        raise InputError(f"{where}: expected a table with project, python, env")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise InputError(f"{where}.{unknown[0]}: unknown key (expected {', '.join(KEYS)})")
    for key in ("project", "python"):
        _check_text(table, key, where)
    env = _env(table, where)
    return HostSettings(name, table.get("project", "."), table.get("python", "python3"), env)


def _check_text(table: dict, key: str, where: str) -> None:
    """`key`, where the table sets it, is a non-empty string."""
    if key in table and (not isinstance(table[key], str) or not table[key].strip()):
        raise InputError(f"{where}.{key}: expected a non-empty string")


def _env(table: dict, where: str) -> dict[str, str]:
    """The table's `env`: NAME = "value" strings, each NAME one a shell takes."""
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and _ENV_NAME.fullmatch(k) and isinstance(v, str) for k, v in env.items()
    ):
        raise InputError(f'{where}.env: expected a table of NAME = "value" strings')
    return dict(env)


def host_settings(name: str, config: Path) -> HostSettings:
    """The settings of `name` from `config` (the user's config.toml), else the defaults."""
    if not config.exists():
        return HostSettings(name)
    try:
        data = tomlfile.loads(read_text(config))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{config}: cannot be read ({type(exc).__name__})") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{config}: expected TOML: {exc}") from None
    return parse_hosts(data, config).get(name, HostSettings(name))
