"""The fleet script's reply read back: a short log is read whole, a long one from its tail."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from fontaine_tui.core.runs import fleet
from fontaine_tui.core.runs.registry import Entry


def _look(run: Path) -> fleet.FleetRow:
    entry = Entry("r", str(run), socket.gethostname(), pid=0)
    look = fleet.look_host(entry.host, [entry], True, 10.0, run)
    assert not look.error, look.error
    return look.rows[0]


def _lines(first: int, last: int) -> str:
    return "".join(
        json.dumps(
            {
                "kind": "train",
                "step": s,
                "time": float(s),
                "loss": 1.0,
                "step_s": 0.5,
                "pad": "x" * 200,
            }
        )
        + "\n"
        for s in range(first, last + 1)
    )


def test_a_short_log_keeps_its_first_line(tmp_path: Path) -> None:
    (tmp_path / "train_log.jsonl").write_text(_lines(7, 7))
    row = _look(tmp_path)
    assert row.step == 7 and row.step_s == 0.5


def test_a_long_log_drops_only_the_torn_piece_of_its_tail(tmp_path: Path) -> None:
    (tmp_path / "train_log.jsonl").write_text(_lines(1, 400))  # ~100 KiB, past the tail
    row = _look(tmp_path)
    assert row.step == 400 and row.state == "attached"


def test_a_missing_folder_is_its_rows_note(tmp_path: Path) -> None:
    row = _look(tmp_path / "gone")
    assert row.state == "no folder"
