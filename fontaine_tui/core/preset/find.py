"""Find presets on disk (FONTAINE_PRESETS, ./presets, the installed copy) and load them.

This module holds the folders a name is looked up in, a name or path resolved to its file,
every known preset, and a preset loaded from its TOML."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from fontaine_tui.core import tomlfile
from fontaine_tui.core.preset.checks import PresetError
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.preset.validate import validate
from fontaine_tui.core.readfile import read_whole

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def preset_dirs() -> list[Path]:
    """The folders preset names are looked up in, first match wins.

    In order: FONTAINE_PRESETS, ./presets, the checkout's presets/ beside fontaine_tui/, and the
    copy installed with the package (fontaine_tui/presets, from the same presets/ folder:
    setup.py)."""
    dirs = []
    if env := os.environ.get("FONTAINE_PRESETS"):
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
    dirs.append(Path.cwd() / "presets")
    package = Path(__file__).resolve().parents[2]
    dirs.append(package.parent / "presets")
    dirs.append(package / "presets")
    seen, out = set(), []
    for d in dirs:
        key = d.resolve() if d.exists() else d
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def resolve(name_or_path: str) -> Path:
    """A preset name (looked up in preset_dirs) or a path to a .toml file."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or os.sep in name_or_path:
        if not candidate.exists():  # a pipe or a folder: refused when read
            raise PresetError(candidate, "file", "no such preset file")
        return candidate
    for d in preset_dirs():
        p = d / f"{name_or_path}.toml"
        if p.is_file():
            return p
    known = ", ".join(sorted(list_presets())) or "none"
    raise PresetError(name_or_path, "name", f"no such preset (known: {known})")


def list_presets() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in preset_dirs():
        if d.is_dir():
            for p in sorted(d.glob("*.toml")):
                found.setdefault(p.stem, p)
    return found


def load_preset(name_or_path: str | Path) -> Preset:
    path = resolve(str(name_or_path))
    try:
        raw = read_whole(path)
    except OSError as exc:
        raise PresetError(path, "file", f"cannot read ({exc.strerror})") from None
    try:
        doc = tomlfile.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise PresetError(path, "file", "expected UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise PresetError(path, "toml", f"expected valid TOML ({exc})") from None
    return validate(path, doc)
