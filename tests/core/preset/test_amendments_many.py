"""A preset's [[amendments]] read in time linear in their number (core/preset/amendments.py).

A preset a script wrote with thousands of extends (demosonly_1gpu without its own amendments,
each extend declared before the first probe) is loaded, frozen into a run folder, read back
from prereg.json and its verdict computed, as `verdict` does: 20,000 amendments take about ten
times what 2,000 take, never a hundred times (each one checked against all those before it)."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze, read_prereg
from fontaine_tui.core.verdict.rules import compute_verdict
from tests.logs import write_log

ROOT = Path(__file__).resolve().parents[3]


def _bench():  # bench/amendments.py's preset writer, the one its --in-preset times
    spec = importlib.util.spec_from_file_location("amendments", ROOT / "bench" / "amendments.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


in_preset = _bench().in_preset


def _read(root: Path, count: int) -> float:
    """Seconds to load the preset, freeze it, read prereg.json back and compute the verdict."""
    path = in_preset(root, count)
    folder = RunFolder(root / "run")
    folder.root.mkdir()
    write_log(folder.log)
    store = load_log(folder.log, columns=False)
    start = time.perf_counter()
    freeze(folder, load_preset(path), ["engine"], "h", now=1_800_000_000)
    preset = read_prereg(folder).frozen_preset()
    verdict = compute_verdict(store, preset)
    took = time.perf_counter() - start
    assert len(preset.amendments) == count
    assert verdict.endpoint_step == 1000 + 250 * count  # every extend applied, in turn
    return took


def test_twenty_thousand_preset_amendments_take_about_ten_times_two_thousand(tmp_path):
    small = min(_read(tmp_path / f"s{i}", 2_000) for i in range(3))
    big = min(_read(tmp_path / f"b{i}", 20_000) for i in range(2))
    assert big / small < 15, f"2,000: {small:.2f} s, 20,000: {big:.2f} s ({big / small:.0f}x)"
