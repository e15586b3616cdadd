"""Layer rules: core never imports Textual; nothing in fontaine_tui imports torch at import time."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import fontaine_tui

ROOT = Path(fontaine_tui.__file__).resolve().parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_core_modules_never_import_textual_or_rich_ui():
    offenders = [p.name for p in (ROOT / "core").glob("*.py") if "textual" in _imports(p)]
    assert offenders == []


def test_nothing_in_fontaine_tui_imports_torch_or_transformers():
    offenders = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
                 if _imports(p) & {"torch", "transformers"}]
    assert offenders == []


def test_engine_never_imports_fontaine_tui():
    engine = ROOT.parent / "engine"
    offenders = [p.name for p in engine.rglob("*.py")
                 if _imports(p) & {"fontaine_tui", "textual"}]
    assert offenders == []


def test_importing_every_core_module_and_the_cli_loads_neither_textual_nor_torch():
    core = [f"fontaine_tui.core.{m.name}" for m in pkgutil.iter_modules([str(ROOT / "core")])]
    code = (
        "import sys, importlib\n"
        f"for m in {core!r}: importlib.import_module(m)\n"
        "import fontaine_tui.cli as c; c.build_parser()\n"
        "bad = sorted(k for k in ('torch', 'transformers', 'textual') if k in sys.modules)\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert len(core) >= 6
