"""The docs' verdict.json example is the code's output, not a hand-written copy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_docs_verdict_example_is_what_the_code_writes():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import verdict_example
    finally:
        sys.path.pop(0)
    page = (ROOT / "docs" / "verdict-json.md").read_text()
    assert verdict_example.block() in page, (
        "docs/verdict-json.md's verdict.json example differs from the code's: "
        "run `python scripts/verdict_example.py --write`")
    assert '"verdict": "AMBIGUOUS-BY-INSTRUMENT"' in verdict_example.example()
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "verdict_example.py")],
                         capture_output=True, text=True, check=True)
    assert res.stdout.strip() == verdict_example.example()
