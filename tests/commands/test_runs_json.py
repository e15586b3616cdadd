"""`fontaine-tui runs -j`: each run's read with its signed distances to the bounds.

Real run folders (frozen prereg.json, the demo's log) in a registry, `runs -j` in a real
subprocess: a finished run, a provisional one, and a blinded one that shows no read at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.verdict import prereg
from tests.commands.test_surfaces_agree import STEPS, make
from tests.logs import SCALED_LIKE, records_upto, write_log

ROOT = Path(__file__).resolve().parents[2]


def _folder(
    tmp_path: Path, name: str, upto: int, blind: bool = False, probes: dict | None = None
) -> Path:
    text = (ROOT / "presets" / "demosonly_1gpu.toml").read_text()
    if blind:
        text = text.replace("[verdict]\n", "[verdict]\nblind = true\n", 1)
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    root = tmp_path / name
    root.mkdir()
    prereg.freeze(RunFolder(root), load_preset(path), ["python"], "h")
    write_log(
        root / "train_log.jsonl", records_upto(upto, **({"probes": probes} if probes else {}))
    )
    return root


def runs_json(tmp_path: Path, folders: dict[str, Path]) -> dict[str, dict]:
    """`fontaine-tui runs -j` (the real CLI) over these run folders, registered here: each
    run's row by its name."""
    registry_path = tmp_path / "state" / "babysit.toml"
    reg = Registry(registry_path)
    for name, root in folders.items():
        reg.upsert(Entry(name=name, run_dir=str(root), host=hostname(), pid=0, preset="x"))
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "runs", "-j"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "FONTAINE_REGISTRY": str(registry_path)},
    )
    assert res.returncode == 0, res.stderr
    docs = [json.loads(line) for line in res.stdout.splitlines()]
    return {d["name"]: d for d in docs}


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    tmp_path = tmp_path_factory.mktemp("runs")
    folders = {
        name: _folder(tmp_path, name, upto, blind, probes)
        for name, upto, blind, probes in (
            ("done", 1000, False, None),
            ("half", 750, False, None),
            ("blind", 750, True, None),
            ("scaled", 1000, False, SCALED_LIKE),
        )
    }
    # a run whose endpoint an extend moved to 1250, at step 1000 (as the surfaces' test makes it)
    extended = {"blind": False, "lock": None, "stop_on_lock": False, "restart": False}
    extended |= {"amend": ("--extend-to", "1250"), "values": dict.fromkeys(STEPS, 3.2)}
    (tmp_path / "extended").mkdir()
    folders["extended"] = make(tmp_path / "extended", {**extended, "cut": 1000})
    return runs_json(tmp_path, folders)


def test_runs_json_gives_the_read_and_its_distances_to_each_bound(rows):
    done = rows["done"]
    assert done["schema"] == "fontaine-tui/runs/1"
    r = done["reading"]
    assert (r["label"], r["provisional"], r["read_step"]) == ("AMBIGUOUS", False, 1000)
    assert r["read_value"] == pytest.approx(3.7929) and r["value"] == pytest.approx(0.6929)
    raw = r["rules"]["raw"]
    # lower is better: healthy 0.3, drift 1.0158; the delta 0.6929 lies between them
    assert raw["to_healthy"] == pytest.approx(0.3 - 0.6929)
    assert raw["to_drift"] == pytest.approx(1.0158 - 0.6929)
    assert raw["side"] == "between" and raw["label"] == "AMBIGUOUS"
    half = rows["half"]["reading"]
    assert half["provisional"] is True and half["read_step"] == 750
    assert rows["half"]["read"].startswith("PROVISIONAL ")
    assert half["rules"]["raw"]["to_healthy"] == pytest.approx(0.3 - half["value"])


def test_the_scale_adjusted_rule_has_its_own_bounds_and_distances(rows):
    """The reference experiment's disagreement: delta +1.5, past the raw drift bound (+1.0158),
    between the scaled bounds (x s = 3.613)."""
    r = rows["scaled"]["reading"]
    s, raw, scaled = r["scale"], r["rules"]["raw"], r["rules"]["scaled"]
    assert s == pytest.approx(12.5087 / 3.4623) and r["value"] == pytest.approx(1.5)
    assert scaled["healthy"] == pytest.approx(0.3 * s) and scaled["drift"] == pytest.approx(
        1.0158 * s
    )
    assert raw["side"] == "drift" and raw["to_drift"] == pytest.approx(1.0158 - 1.5)
    assert scaled["side"] == "between"
    assert scaled["to_healthy"] == pytest.approx(0.3 * s - 1.5)
    assert scaled["to_drift"] == pytest.approx(1.0158 * s - 1.5)
    assert r["verdict"] == "AMBIGUOUS-BY-INSTRUMENT"


def test_an_extended_run_trains_to_its_endpoint_in_force(rows):
    """recipe.steps is 1000; the extend moved the endpoint to 1250, where a resume trains:
    the row counts toward 1250, as the console's progress does. (This one ended at 1000:
    no probe at the endpoint in force.)"""
    extended = rows["extended"]
    assert extended["steps"] == 1250 and rows["done"]["steps"] == 1000
    assert extended["read"] == "UNDECIDABLE"


def test_a_blinded_run_shows_no_read_in_runs_json(rows):
    blind = rows["blind"]
    assert blind["read"] == "PROVISIONAL BLINDED"
    assert blind["reading"] is None and blind["probe_value"] is None
    said = json.dumps({k: v for k, v in blind.items() if k not in ("checked_at", "run_dir")})
    # what the rule reads at 750 (levels, delta, class): none may show
    for secret in ("3.4623", "3.5", "0.4", "AMBIGUOUS", "HEALTHY", "DRIFT", "to_healthy"):
        assert secret not in said, secret
