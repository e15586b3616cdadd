"""The console's warnings panel shows an alert the trainer raised, at its level and in its
words (literal: no escape or markup reaches the terminal), and a malformed alert record as
one counted warning; the verdict card's label stays the one the evidence gives."""

from __future__ import annotations

from pathlib import Path

from tests.console.conftest import console, loaded, text
from tests.logs import RIGONLY_LIKE, T0, records_upto, write_log


async def test_the_panel_shows_the_trainers_alert_and_counts_a_bad_one(tmp_path: Path) -> None:
    recs = records_upto(1000, RIGONLY_LIKE)
    at = next(i for i, r in enumerate(recs) if r["kind"] == "train" and r["step"] == 600) + 1
    recs[at:at] = [
        {
            "kind": "alert",
            "step": 600,
            "time": T0 + 300,
            "level": "error",
            "title": "data shard 3 \x1b[31mmissing",
            "text": "[bold]fell back[/bold] to shard 2",
        },
        {"kind": "alert", "step": 601, "title": ["not", "a", "title"]},
    ]
    folder = tmp_path / "run"
    folder.mkdir()
    log = write_log(folder / "train_log.jsonl", recs)
    plain = write_log(tmp_path / "plain" / "train_log.jsonl", records_upto(1000, RIGONLY_LIKE))
    label = {}
    for name, path in (("alerted", log), ("plain", plain)):
        app = console(path)
        async with app.run_test(size=(160, 50)) as pilot:
            await loaded(pilot, 1000)
            await pilot.pause(0.2)
            label[name] = app.session.latest().verdict
            if name == "alerted":
                shown = " ".join(text(app.screen.query_one("#warnings")).split())
    assert "ALERT trainer-alert since " in shown
    assert (
        "the trainer's alert at step 600: data shard 3 \\x1b[31mmissing: [bold]fell back" in shown
    )
    assert "1 alert record(s) not relayed; first: line " in shown
    assert "alert 'title' is a JSON array" in shown
    assert label["alerted"] == label["plain"]
