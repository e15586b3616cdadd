"""Ingest speed does not depend on our own separators: the lean path (kind and step only,
every line's JSON syntax checked) takes the lines of every schema-v1 writer — compact, Python's
default json.dumps, keys in any order — and gives the store the full parse gives."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from fontaine_tui.core.log import read as read_mod
from fontaine_tui.core.log.lines import LineCutter
from fontaine_tui.core.log.read import load_log

ROOT = Path(__file__).resolve().parents[3]


def _make_log():
    spec = importlib.util.spec_from_file_location("make_log", ROOT / "bench" / "make_log.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MAKE_LOG = _make_log()


def _lean_view(st):
    return (
        list(st.steps),
        st.probes,
        [p.step for p in st.superseded],
        st.counts(),
        [(m.line, m.reason) for m in st.malformed],
        [c.step for c in st.checkpoints],
        [(e.line, e.event) for e in st.events],
    )


@pytest.mark.parametrize("style", MAKE_LOG.STYLES)
def test_every_writer_style_takes_the_lean_path(tmp_path, style):
    path = tmp_path / f"{style}.jsonl"
    MAKE_LOG.make(path, 20_000, style)
    cutter = LineCutter(track=False)
    lines, first, _, block = cutter.feed_block(path.read_bytes())
    assert len(lines) == 20_000
    lean = read_mod._parse_block_steps(block, lines, first)
    assert lean is not None, f"{style}: the block fell back to line-by-line parsing"
    assert len(lean.train_steps) > 19_000


@pytest.mark.parametrize("style", MAKE_LOG.STYLES)
def test_lean_and_full_reads_agree_on_every_style(tmp_path, style):
    path = tmp_path / f"{style}.jsonl"
    MAKE_LOG.make(path, 20_000, style)
    compact = tmp_path / "compact_ref.jsonl"
    MAKE_LOG.make(compact, 20_000, "compact")
    lean, full = load_log(path, columns=False), load_log(path, columns=True)
    assert _lean_view(lean) == _lean_view(full)
    # the same records in another writer's bytes read the same as the engine's own
    assert _lean_view(lean) == _lean_view(load_log(compact, columns=False))
