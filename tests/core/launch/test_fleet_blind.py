"""A down host's last reading under the viewer's --blind: its read is not shown.

The fleet cache keeps each run's last good reading and not whether its read was final. A real
look at a run cut at step 750 of 1000 (not blinded by its preset) writes it; the same reading
shown for a host that does not answer says BLINDED, no probe value, to a blind viewer."""

from __future__ import annotations

import dataclasses
import json

from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.runs.fleet import Fleet, row_cells
from fontaine_tui.core.runs.registry import Entry
from tests.commands.test_blind import SECRETS, run_folder

DOWN = "down.invalid"  # never resolves: the look fails, the cache answers


def test_a_down_hosts_last_reading_is_blinded_for_a_blind_viewer(tmp_path):
    root = run_folder(tmp_path, 750, blind=False)
    cache = tmp_path / "fleet.json"
    fleet = Fleet(cache, tmp_path, hostname(), ("-o", "ConnectTimeout=1"), deadline_s=5)
    here = Entry(name="cut", run_dir=str(root), host=hostname(), preset="blind")
    (fresh,), _ = fleet.check([here])
    assert fresh.read.startswith("PROVISIONAL ") and fresh.probe_value is not None
    doc = json.loads(cache.read_text())
    doc["rows"][f"{DOWN}\0{root}"] = {**dataclasses.asdict(fresh), "host": DOWN}
    cache.write_text(json.dumps(doc))

    far = dataclasses.replace(here, host=DOWN)
    (shown,), down = fleet.check([far])
    assert DOWN in down and shown.stale
    assert any(s in " ".join(row_cells(shown, 0)) for s in SECRETS)  # not blind: as it was

    (hidden,), _ = fleet.check([far], asked=True)
    cells = row_cells(hidden, 0)
    assert hidden.stale and cells[0] == "750/1000"
    assert cells[2] == "750:-" and cells[3] == "PROVISIONAL BLINDED", cells
    assert hidden.reading is None
    assert not any(s in " ".join(cells) for s in SECRETS)
