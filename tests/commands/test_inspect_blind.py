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

from tests.commands.test_blind import SECRETS, cli, run_folder
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
