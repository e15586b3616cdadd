"""A run of every shipped preset reads back through every command that reads a run folder.

For each preset in presets/: a run folder frozen with it (prereg.json, as `launch` freezes it)
holding a whole run's record (the engine's log for an engine preset, a Hugging Face Trainer's
trainer_state.json for `own_trainer_hf`), then `verdict`, `verdict --json`, `replay --plain`,
`attach --plain --until-end`, `runs -j`, and `seal` + `verify`, each through the real CLI. Each
reads the run, and all give the verdict's label. (`pretrain_so101`, the README's first run,
froze an interpretation keyed by the classes its [labels] rename, and no command could read it
back.)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import LOG, RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.verdict.prereg import freeze
from tests.commands.test_surfaces_agree import cli, last_verdict_line
from tests.logs import T0, records, write_log

ROOT = Path(__file__).resolve().parents[2]
PRESETS = sorted((ROOT / "presets").glob("*.toml"))


def engine_run(root: Path, preset_path: Path) -> None:
    """A whole engine run at the preset's cadence: its probes fall from 3.0 by 0.01 each."""
    preset = load_preset(preset_path)
    every, steps = int(preset.recipe["eval_every"]), int(preset.recipe["steps"])
    probes = {
        s: (3.0 - 0.01 * k, 3.1 - 0.01 * k) for k, s in enumerate(range(every, steps + 1, every))
    }
    freeze(RunFolder(root), preset, ["fontaine-tui", "launch", preset_path.stem], "h", now=T0 - 10)
    write_log(root / LOG, records(probes=probes, steps=steps, run=preset_path.stem))


def trainer_run(root: Path, preset_path: Path) -> None:
    """A whole Hugging Face Trainer run, its trainer_state.json written by transformers."""
    from transformers import TrainerState

    history: list[dict] = [{"loss": 2.0 - s / 200, "step": s} for s in range(10, 201, 10)]
    history += [{"eval_loss": 1.5 - s / 1000, "step": s} for s in (50, 100, 150, 200)]
    freeze(RunFolder(root), load_preset(preset_path), ["python", "train.py"], "h", now=T0 - 10)
    TrainerState(global_step=200, max_steps=200, log_history=history).save_to_json(
        str(root / "trainer_state.json")
    )


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FONTAINE_BANK", str(tmp_path / "bank"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("FONTAINE_REGISTRY", str(tmp_path / "registry.toml"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)
    return tmp_path


@pytest.mark.parametrize("preset_path", PRESETS, ids=lambda p: p.stem)
def test_a_run_of_every_shipped_preset_reads_back(isolated: Path, preset_path: Path) -> None:
    text = preset_path.read_text()
    if "bank = " in text:  # its comparator is a banked run: bank the one it names first
        name = text.split('bank = "', 1)[1].split('"', 1)[0]
        banked = isolated / "banked"
        banked.mkdir()
        engine_run(banked, ROOT / "presets" / f"{name}.toml")
        code, _, err = cli("bank", "add", str(banked), "--as", name)
        assert code == 0, err
    root = isolated / preset_path.stem
    root.mkdir()
    (trainer_run if "[source]" in text else engine_run)(root, preset_path)

    code, out, err = cli("verdict", str(root), "--json")
    assert "error" not in err and code in (0, 3, 4, 5), (code, err)
    doc = json.loads(out)
    label, shown = doc["verdict"], doc.get("label", doc["verdict"])
    assert doc["provisional"] is False and doc["read_step"] == doc["endpoint_step"], doc
    code_text, out, err = cli("verdict", str(root))
    assert code_text == code and f"VERDICT: {shown}" in out, (out, err)

    for args in (("replay", str(root), "--plain"), ("attach", str(root), "--plain", "--until-end")):
        got, out, err = cli(*args)
        assert got == code and last_verdict_line(out).startswith(f"verdict: {shown} "), (args, err)

    Registry(Path(os.environ["FONTAINE_REGISTRY"])).upsert(
        Entry(name=preset_path.stem, run_dir=str(root), host=hostname(), pid=0, preset="x")
    )
    got, out, err = cli("runs", "-j")
    assert got == 0, err
    [row] = [r for r in map(json.loads, out.splitlines()) if r["name"] == preset_path.stem]
    assert row["read"] == shown and not row["note"].startswith("no read"), row

    bundle = isolated / "b.zip"
    got, out, err = cli("seal", str(root), "-o", str(bundle))
    assert got == 0, err
    got, out, err = cli("verify", str(bundle))
    assert got == 0 and "broken" not in out, (out, err)
    assert label in {"HEALTHY", "SAME-DRIFT", "AMBIGUOUS", "AMBIGUOUS-BY-INSTRUMENT"}
