"""`fontaine-tui inspect` on a blinded run: no word of what the hidden read would be.

A run folder frozen from a blind preset (demosonly_1gpu with `blind = true`) whose log holds
the probe at step 750 twice with other values, read by `inspect` in real subprocesses. A
verdict read at such a step is UNDECIDABLE: before the endpoint, saying which step conflicts
(or that a read there is UNDECIDABLE) names the class of the hidden read. `verdict` counts the
conflicting probes and says no more; `inspect` says as much, in text and JSON. At the endpoint,
or on a run that is not blinded, it says the step and what it means for a read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from tests.commands.test_blind import SECRETS, blind_preset, cli, run_folder
from tests.logs import T0, dumps, probe, records_upto, write_log


def _conflicting(tmp_path: Path, upto: int, blind: bool = True) -> Path:
    """The run cut at `upto`, the probe at step 750 logged again with another eval MAE."""
    root = run_folder(tmp_path, upto, blind)
    write_log(root / "train_log.jsonl", records_upto(upto))
    with (root / "train_log.jsonl").open("a") as fh:
        fh.write(dumps(probe(750, T0 + 380, 3.6, 3.3)) + "\n")
    return root


def _notices(text: str) -> str:
    return text.split("\nunread   ", 1)[1]


def test_inspect_names_no_conflicting_step_of_a_blinded_run_before_its_endpoint(tmp_path):
    root = _conflicting(tmp_path, 750)
    card = cli(tmp_path, "verdict", str(root))
    assert card.returncode == 7 and "1 conflicting probe(s)\n" in card.stdout, card.stdout
    shown = cli(tmp_path, "inspect", str(root))
    assert shown.returncode == 0, shown.stderr
    said = _notices(shown.stdout)
    assert "1 step(s) logged twice with other values" in said, said
    assert "hidden (blinded) until the endpoint" in said
    assert "UNDECIDABLE" not in shown.stdout and not re.search(r"\b750\b", said), said
    assert not any(s in shown.stdout + shown.stderr for s in SECRETS)
    doc = json.loads(cli(tmp_path, "inspect", str(root), "-j").stdout)
    [notice] = doc["notices"]
    assert notice.startswith("1 step(s) logged twice with other values")
    assert "UNDECIDABLE" not in json.dumps(doc) and "750" not in notice
    assert not (root / "review.jsonl").exists()  # nothing recorded


def test_inspect_names_the_conflicting_step_at_the_endpoint_or_without_a_blind(tmp_path):
    for name, upto, blind in (("final", 1000, True), ("open", 750, False)):
        here = tmp_path / name
        here.mkdir()
        root = _conflicting(here, upto, blind)
        shown = cli(here, "inspect", str(root))
        assert shown.returncode == 0, shown.stderr
        assert _notices(shown.stdout).startswith(
            "1 step(s) logged twice with other values (a verdict read there is UNDECIDABLE): 750"
        ), (name, shown.stdout)


def _labelled(tmp_path: Path, upto: int, detail: str) -> Path:
    """A blinded run whose preset renames the classes, its log ending at `upto` with `detail`."""
    preset = blind_preset(tmp_path)
    preset.write_text(preset.read_text() + '\n[labels]\nHEALTHY = "LEARNED"\n')
    root = tmp_path / "run"
    root.mkdir()
    freeze(RunFolder(root), load_preset(preset), ["fontaine-tui", "launch", "blind"], "test-host")
    end = {"kind": "event", "step": upto, "time": T0 + upto, "event": "end", "detail": detail}
    write_log(root / "train_log.jsonl", [*records_upto(upto), end])
    return root


@pytest.mark.parametrize(
    "detail", ["early stop: LEARNED", "the run looks healthy", "stopping: SAME-DRIFT"]
)
def test_inspect_names_no_class_or_label_a_blinded_run_ended_with(tmp_path, detail):
    """The trainer's end words name a verdict class or the preset's label for one, and the run
    ended before its endpoint: `verdict` hides the read, and `inspect` and `replay --plain` hide
    those words (a class is the read itself). At the endpoint the read is final: they are shown."""
    root = _labelled(tmp_path, 750, detail)
    assert cli(tmp_path, "verdict", str(root)).returncode == 7
    shown = cli(tmp_path, "inspect", str(root))
    assert shown.returncode == 0, shown.stderr
    [ended] = [ln for ln in shown.stdout.splitlines() if ln.startswith("ended    ")]
    assert ended.startswith("ended    cleanly at step 750 (its words hold a number"), ended
    doc = json.loads(cli(tmp_path, "inspect", str(root), "-j").stdout)
    assert doc["ended"]["detail"].startswith("its words hold a number"), doc["ended"]
    assert detail.split()[-1] not in shown.stdout + json.dumps(doc)
    plain = cli(tmp_path, "replay", str(root), "--plain").stdout  # the session's words, so too
    assert "event end at step 750: its words hold a number" in plain, plain[-600:]
    assert detail.split()[-1] not in plain
    final = tmp_path / "final"
    final.mkdir()
    root = _labelled(final, 1000, detail)
    doc = json.loads(cli(final, "inspect", str(root), "-j").stdout)
    assert doc["ended"]["detail"] == detail, doc["ended"]
