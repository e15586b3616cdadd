"""ARCHITECTURE.md's module listing is the modules' own docstrings (scripts/architecture.py).

A module is described once, in its docstring; the listing is written from them, so a new
module without one, or a docstring changed without the listing written again, fails here.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "architecture.py"


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(cwd / "scripts" / "architecture.py"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_listing_is_the_docstrings():
    """Run `python scripts/architecture.py` after adding a module or changing a docstring."""
    proc = run(ROOT, "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_check_names_each_module_that_differs(tmp_path):
    """A tree of its own: the listing written between the markers and the prose kept, then a
    module without a docstring, a changed docstring, a new module and a removed one each named
    by --check until the listing is written again."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / "architecture.py")
    tui, engine = tmp_path / "fontaine_tui", tmp_path / "engine"
    core = tui / "core"
    core.mkdir(parents=True)
    engine.mkdir()
    (tui / "__init__.py").write_text('"""The console."""\n')
    (tui / "app.py").write_text('"""The app: modes and bindings.\n\nDetails, not listed.\n"""\n')
    (core / "__init__.py").write_text('"""Rules and IO."""\n')
    (core / "text.py").write_text('"""Text made safe to show."""\n\nX = 1\n')
    (engine / "__init__.py").write_text('"""The trainer."""\n')
    (engine / "train.py").write_text('"""The loop."""\n')
    doc = tmp_path / "ARCHITECTURE.md"
    prose = "# Architecture\n\nLayers.\n\n## Modules\n\n{}\n\n## Where new things go\n\nHere.\n"
    markers = [
        ln
        for ln in (ROOT / "ARCHITECTURE.md").read_text().splitlines()
        if ln.startswith(("<!-- BEGIN modules", "<!-- END modules"))
    ]
    assert len(markers) == 2, markers
    doc.write_text(prose.format("\n".join(markers)))

    assert run(tmp_path, "--check").returncode == 1
    wrote = run(tmp_path)
    assert wrote.returncode == 0, wrote.stdout
    text = doc.read_text()
    assert text.startswith("# Architecture\n\nLayers.\n\n## Modules\n\n<!-- BEGIN modules")
    assert text.endswith("<!-- END modules -->\n\n## Where new things go\n\nHere.\n")
    for line in (
        "### `fontaine_tui/`\n\nThe console.\n\n- `app.py`: The app: modes and bindings.\n",
        "### `fontaine_tui/core/`\n\nRules and IO.\n\n- `text.py`: Text made safe to show.\n",
        "### `engine/`\n\nThe trainer.\n\n- `train.py`: The loop.\n",
    ):
        assert line in text, text
    assert "Details" not in text
    assert run(tmp_path, "--check").returncode == 0

    (core / "limits.py").write_text("X = 1\n")  # a new module, no docstring
    for args in (("--check",), ()):
        proc = run(tmp_path, *args)
        assert proc.returncode == 1, proc.stdout
        assert "fontaine_tui/core/limits.py: no docstring" in proc.stdout, proc.stdout
    assert doc.read_text() == text  # nothing written

    (core / "limits.py").write_text('"""Every input within a bound."""\n')
    (core / "text.py").write_text('"""Text from outside, made safe to show."""\n')
    (engine / "train.py").unlink()
    proc = run(tmp_path, "--check")
    assert proc.returncode == 1
    said = proc.stdout.splitlines()
    assert "fontaine_tui/core/limits.py: not listed" in proc.stdout, said
    assert "engine/train.py: listed, no longer there" in proc.stdout, said
    assert (
        "fontaine_tui/core/text.py: its docstring says 'Text from outside, made safe to show.',"
        " the listing 'Text made safe to show.'" in proc.stdout
    ), said
    assert not any("app.py" in line for line in said), said  # the others are as listed

    assert run(tmp_path).returncode == 0
    assert run(tmp_path, "--check").returncode == 0
    assert "- `limits.py`: Every input within a bound." in doc.read_text()
