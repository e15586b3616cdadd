"""The house's rules, checked by the real tools.

import-linter's contracts (pyproject.toml), mypy over fontaine_tui and engine, ruff's lint
and format check over the tree, no import cycle, and what importing the core actually loads.
"""

from __future__ import annotations

import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fontaine_tui

ROOT = Path(__file__).resolve().parents[1]


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    return subprocess.run(
        [exe, "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    return subprocess.run([exe, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_ruff_finds_nothing_to_fix():
    proc = ruff("check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_the_tree_is_formatted():
    """`ruff format --check .` is clean: run `ruff format .` before committing."""
    proc = ruff("format", "--check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_ruff_format_check_catches_an_unformatted_file(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("x = {  'a':1 }\n")
    exe = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    proc = subprocess.run(
        [exe, "format", "--check", "--no-cache", str(bad)], capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert "bad.py" in proc.stdout + proc.stderr


def test_import_contracts_are_kept():
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


@pytest.mark.parametrize(
    "where, code, contract",
    [
        ("fontaine_tui/core/log/planted.py", "import textual\n", "never import Textual"),
        ("fontaine_tui/widgets/planted.py", "import fontaine_tui.screens.monitor\n", "Layers"),
        (
            "fontaine_tui/core/follow/planted.py",
            "import fontaine_tui.core.verdict.rules\n",
            "knows no rules",
        ),
        ("engine/planted.py", "import fontaine_tui.core.text\n", "engine never imports"),
        (
            "fontaine_tui/core/launch/targets/local.py",
            "import fontaine_tui.core.launch.targets.ssh\n",
            "A launch target stands alone",
        ),
    ],
)
def test_a_broken_rule_is_caught(tmp_path, where, code, contract):
    """The contracts bite: the same tree with one forbidden import planted fails."""
    for name in ("fontaine_tui", "engine"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / where).write_text(code)
    proc = lint_imports(tmp_path)
    assert proc.returncode != 0
    broken = [line for line in proc.stdout.splitlines() if "BROKEN" in line]
    assert broken, proc.stdout[-2000:]
    assert contract in proc.stdout.split("Broken contracts")[-1], proc.stdout[-3000:]


def test_mypy_passes_over_fontaine_tui_and_the_engine():
    import tomllib

    files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    assert {"fontaine_tui", "engine"} <= set(files), files
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-1000:]


def test_no_import_cycle():
    """Inside a layer too, where the layers contracts allow any import, and in the engine."""
    proc = subprocess.run(
        [sys.executable, "scripts/imports.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout
    assert "import cycles: 0" in proc.stdout


def test_a_planted_import_cycle_is_counted(tmp_path):
    for name in ("fontaine_tui", "scripts"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "fontaine_tui/core/log/planted_a.py").write_text(
        "def f():\n    from fontaine_tui.core.log import planted_b\n"
    )
    (tmp_path / "fontaine_tui/core/log/planted_b.py").write_text(
        "from fontaine_tui.core.log import planted_a\n"
    )
    proc = subprocess.run(
        [sys.executable, "scripts/imports.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "import cycles: 1" in proc.stdout, proc.stdout
    assert "fontaine_tui.core.log.planted_a <-> fontaine_tui.core.log.planted_b" in proc.stdout


def test_a_planted_engine_import_cycle_is_counted(tmp_path):
    """The engine imports its own modules relatively, and hides some imports in functions."""
    for name in ("fontaine_tui", "engine", "scripts"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "engine/planted_a.py").write_text("def f():\n    from . import planted_b\n")
    (tmp_path / "engine/planted_b.py").write_text("from .planted_a import f\n")
    proc = subprocess.run(
        [sys.executable, "scripts/imports.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "import cycles: 1" in proc.stdout, proc.stdout
    assert "engine.planted_a <-> engine.planted_b" in proc.stdout


def test_importing_every_core_and_model_module_and_the_cli_loads_neither_textual_nor_torch():
    """At import time, not only in the source: a lazy import would pass import-linter's
    forbidden contracts only if it is not in the tree at all, so this checks what loads."""
    pkg = Path(fontaine_tui.__file__).parent
    mods = [m.name for m in pkgutil.walk_packages([str(pkg / "core")], "fontaine_tui.core.")]
    mods += [m.name for m in pkgutil.walk_packages([str(pkg / "model")], "fontaine_tui.model.")]
    assert len(mods) >= 25
    code = (
        "import sys, importlib\n"
        f"for m in {mods!r}: importlib.import_module(m)\n"
        "import fontaine_tui.cli as c; c.build_parser()\n"
        "bad = sorted(k for k in ('torch', 'transformers', 'textual') if k in sys.modules)\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "wing", ["log", "follow", "verdict", "preset", "launch", "host", "bank", "notify"]
)
def test_each_core_wing_has_a_curated_face(wing):
    """Each wing's __init__ names what it offers (__all__), and each name is there."""
    import importlib

    face = importlib.import_module(f"fontaine_tui.core.{wing}")
    names = getattr(face, "__all__", None)
    assert names, f"core/{wing}/__init__.py has no __all__"
    assert (face.__doc__ or "").strip(), f"core/{wing}/__init__.py says nothing of the wing"
    missing = [n for n in names if not hasattr(face, n)]
    assert not missing, missing
