from __future__ import annotations

from pathlib import Path

import pytest

from fontaine_tui.core.verdict.presets import load_preset

PRESETS = Path(__file__).resolve().parents[2] / "presets"


@pytest.fixture
def demosonly():
    return load_preset(PRESETS / "demosonly_1gpu.toml")


@pytest.fixture
def raw_only(tmp_path):
    """demosonly_1gpu without its amendment: the kit's raw rule alone."""
    text = (PRESETS / "demosonly_1gpu.toml").read_text()
    head, _, tail = text.partition("[[amendments]]")
    tail = tail[tail.index("[gates]"):]
    path = tmp_path / "raw_only.toml"
    path.write_text(head + tail)
    return load_preset(path)
