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
    # wide enough that no contract's name is wrapped in the report
    env = {**os.environ, "PYTHONPATH": str(cwd), "COLUMNS": "1000"}
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


# (where, what it imports, the contract it breaks): one forbidden import for each contract
PLANTED = [
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
    ("fontaine_tui/core/log/formats/planted.py", "import sqlite3\n", "Only core/limits"),
    (
        "fontaine_tui/model/planted.py",
        "import fontaine_tui.core.verdict.rules\n",
        "reads the rules",
    ),
    # an attribute read, not an import: the store's raw probes (scripts/contracts.py)
    ("fontaine_tui/core/launch/planted.py", "def f(s):\n    return s.probes[5]\n", "run's probes"),
    (
        "fontaine_tui/widgets/planted_reads.py",
        "def f(s):\n    return s.superseded\n",
        "run's probes",
    ),
    # a conflict holds both probes' values: the gate's seen_conflicts hands them out
    (
        "fontaine_tui/model/planted_conflicts.py",
        "def f(store):\n    return store.conflicts[0].second\n",
        "run's probes",
    ),
    # another trainer's values not numbers, named with their steps: seen_odd_values says them
    (
        "fontaine_tui/commands/planted_odd.py",
        "def f(store):\n    return store.odd_values.words(False)\n",
        "run's probes",
    ),
    # a chart, below the surfaces, draws what the gate lets them see, not the store's probes
    (
        "fontaine_tui/core/charts/probes.py",
        "def f(store):\n    return store.probes[5]\n",
        "run's probes",
    ),
    (
        "fontaine_tui/core/charts/overlay.py",
        "def f(store):\n    return store.probes\n",
        "run's probes",
    ),
]


def test_a_broken_rule_is_caught(tmp_path):
    """The contracts bite: the same tree with a forbidden import planted for each contract
    fails, and each contract's report names its own planted module. One copy and one run for
    all: the clean tree breaks none (test_import_contracts_are_kept), so what a contract
    reports here is a planted import."""
    import tomllib

    for name in ("fontaine_tui", "engine"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "contracts.py", tmp_path / "scripts" / "contracts.py")
    for where, code, _ in PLANTED:
        (tmp_path / where).write_text(code)
    proc = lint_imports(tmp_path)
    assert proc.returncode != 0
    broken = proc.stdout.split("Broken contracts")[-1]
    names = [
        c["name"]
        for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
            "contracts"
        ]
    ]
    # each broken contract's report: from its heading to the next contract's heading
    starts = sorted((broken.find(f"\n{n}\n"), n) for n in names if f"\n{n}\n" in broken)
    reports = {
        n: broken[at : (starts[i + 1][0] if i + 1 < len(starts) else len(broken))]
        for i, (at, n) in enumerate(starts)
    }
    for where, _, contract in PLANTED:
        [name] = [n for n in names if contract in n]
        module = where.removesuffix(".py").replace("/", ".")
        assert name in reports, f"{name!r} is not broken:\n{proc.stdout[-3000:]}"
        assert f"{module} ->" in reports[name], reports[name]


# (where, what it holds, what mypy says of it): one type error planted in each checked tree;
# the engine's is a torch call, so a config that stopped following torch would lose it
PLANTED_TYPES = [
    (
        "fontaine_tui/core/planted_types.py",
        'def f() -> int:\n    return "one"\n',
        'Incompatible return value type (got "str", expected "int")',
    ),
    (
        "engine/planted_types.py",
        "import torch\n\n\ndef f() -> str:\n    return torch.zeros(1)\n",
        'Incompatible return value type (got "Tensor", expected "str")',
    ),
]


@pytest.mark.slow  # mypy over both trees and torch: the suite's longest check
def test_mypy_passes_over_fontaine_tui_and_the_engine_and_catches_a_planted_error(tmp_path):
    """Mypy, with pyproject.toml's settings, over a copy of both trees with a type error planted
    in each: it reports those two and nothing else.

    One run proves both: the tree itself is clean (any other error fails), and the settings
    still check both trees (a planted error missed fails). The copy shares this checkout's
    .mypy_cache, so a warm cache stays warm (mypy checks a moved file's hash).
    """
    import tomllib

    files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    assert {"fontaine_tui", "engine"} <= set(files), files
    for name in ("fontaine_tui", "engine"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for where, code, _ in PLANTED_TYPES:
        (tmp_path / where).write_text(code)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary"]
        + ["--cache-dir", str(ROOT / ".mypy_cache")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stdout[-4000:] + proc.stderr[-1000:]
    errors = [line for line in proc.stdout.splitlines() if ": error: " in line]
    for where, _, said in PLANTED_TYPES:
        assert any(e.startswith(f"{where}:") and said in e for e in errors), proc.stdout[-4000:]
    others = [e for e in errors if not e.startswith(tuple(w for w, _, _ in PLANTED_TYPES))]
    assert not others, "\n".join(others[-40:])


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
    """In fontaine_tui, and in the engine, which imports its own modules relatively and hides
    some imports in functions: both cycles planted in one copy, each counted and named."""
    for name in ("fontaine_tui", "engine", "scripts"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "fontaine_tui/core/log/planted_a.py").write_text(
        "def f():\n    from fontaine_tui.core.log import planted_b\n"
    )
    (tmp_path / "fontaine_tui/core/log/planted_b.py").write_text(
        "from fontaine_tui.core.log import planted_a\n"
    )
    (tmp_path / "engine/planted_a.py").write_text("def f():\n    from . import planted_b\n")
    (tmp_path / "engine/planted_b.py").write_text("from .planted_a import f\n")
    proc = subprocess.run(
        [sys.executable, "scripts/imports.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "import cycles: 2" in proc.stdout, proc.stdout
    assert "fontaine_tui.core.log.planted_a <-> fontaine_tui.core.log.planted_b" in proc.stdout
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


PACKAGES = sorted(
    p.parent
    for p in (ROOT / "fontaine_tui").rglob("__init__.py")
    if p.parent.name != "fontaine_tui"
)


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_package_init_is_its_description_only(package):
    """A package's __init__.py says what the package holds and imports nothing.

    Code imports a name from the module that defines it, so importing one module of a wing
    never loads the whole wing.
    """
    import ast

    tree = ast.parse((package / "__init__.py").read_text())
    body = [
        n for n in tree.body if not (isinstance(n, ast.ImportFrom) and n.module == "__future__")
    ]
    has_doc = bool(body) and isinstance(body[0], ast.Expr)
    if package.parent.name == "core" or package.name in ("formats", "targets"):
        assert has_doc, f"{package}/__init__.py says nothing of what it holds"
    rest = [type(n).__name__ for n in body[1 if has_doc else 0 :]]
    assert not rest, f"{package}/__init__.py holds {rest}: move them to a module"


def test_importing_one_module_of_a_wing_loads_only_what_it_needs():
    code = (
        "import sys\n"
        "import fontaine_tui.core.follow.base, fontaine_tui.core.verdict.bounds\n"
        "loaded = [m for m in ('fontaine_tui.core.follow.local', 'fontaine_tui.core.follow.ssh',"
        " 'fontaine_tui.core.verdict.rules', 'fontaine_tui.core.seal.export') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def dead_code(*extra: str) -> list[str]:
    """Vulture's report over fontaine_tui and engine, with the whitelist, at 60% confidence."""
    exe = shutil.which("vulture") or str(Path(sys.executable).parent / "vulture")
    proc = subprocess.run(
        [exe, "fontaine_tui", "engine", "scripts/vulture_whitelist.py", *extra]
        + ["--min-confidence", "60"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 3), proc.stdout[-3000:] + proc.stderr[-2000:]  # 3: found some
    return proc.stdout.splitlines()


def test_vulture_finds_no_dead_code():
    """Delete what nothing uses; a name used indirectly goes into scripts/vulture_whitelist.py."""
    assert dead_code() == []


def test_vulture_finds_a_planted_dead_function(tmp_path):
    planted = tmp_path / "errors.py"
    source = (ROOT / "fontaine_tui/core/errors.py").read_text()
    planted.write_text(source + "\n\ndef planted_never_called() -> None:\n    pass\n")
    found = dead_code(str(planted))
    assert len(found) == 1, found
    assert "errors.py" in found[0] and "unused function 'planted_never_called'" in found[0]
