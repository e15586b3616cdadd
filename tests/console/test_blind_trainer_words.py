"""The trainer's own words on the monitor: blinded and masked as its alerts are.

A blind run folder cut at step 750 (tests/commands/test_blind.py's `run_folder`), with event
records in its log and an engine.out.log holding what a trainer prints (its eval line, HF
Trainer's dict, credentials). The real console replays it: the events panel and the
engine.out.log pane show no credential, and while the read is blinded no line or event that
holds a number or names the rule's metric; the pane says how many lines it hid. Without the
blind the same lines show, masked. The file keeps what the command wrote."""

from __future__ import annotations

import pytest

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.widgets.engine_tail import EngineTail
from fontaine_tui.widgets.events_panel import EventsPanel
from tests.commands.test_blind import SECRETS, run_folder
from tests.commands.test_blind_events import EVENTS, TOKEN
from tests.console.conftest import SIZE, console, loaded, text, until
from tests.logs import dumps

CREDENTIALS = (
    TOKEN,
    "0123456789abcdef0123456789abcdef01234567",
    "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij",
    "pw@",
    "eyJhbGciOiJIUzI1NiJ9abcdefghij",
    "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef",
)
OUTPUT = (
    "loading shards\n"
    "eval_chunk_mae=3.5000 train_chunk_mae=3.1000\n"
    "{'eval_loss': '1.523', 'epoch': 2.0}\n"
    "Eval Chunk MAE improved\n"
    f"HF_TOKEN={TOKEN}\n"
    f"WANDB_API_KEY={CREDENTIALS[1]}\n"
    f"pushing with {CREDENTIALS[2]}\n"
    "cloning https://alice:pw@host/repo\n"
    f"Authorization: Bearer {CREDENTIALS[4]}\n"
    f"OPENAI_KEY {CREDENTIALS[5]}\n"
    "saving model\n"
)


@pytest.mark.parametrize("blind", [True, False], ids=["blinded", "open"])
async def test_the_events_and_output_panes_hide_and_mask_the_trainers_words(tmp_path, blind):
    root = run_folder(tmp_path, 750, blind=blind)
    with (root / "train_log.jsonl").open("a") as fh:
        for rec in EVENTS:
            fh.write(dumps(rec) + "\n")
    (root / "engine.out.log").write_text(OUTPUT)
    app = console(root / "train_log.jsonl", preset=load_preset(str(tmp_path / "blind.toml")))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 750)
        tail = app.screen.query_one(EngineTail)
        await until(pilot, lambda: app.session.tail_total >= OUTPUT.count("\n"))
        await pilot.pause(0.2)
        events = text(app.screen.query_one(EventsPanel))
        pane = "\n".join([*tail.lines, str(tail.border_subtitle or "")])
    said = events + "\n" + pane
    assert not any(c in said for c in CREDENTIALS), said
    assert "HF_TOKEN=***" in said and "WANDB_API_KEY=***" in pane
    assert "loading shards" in pane and "saving model" in pane
    assert "env: HF_TOKEN=***" in events and "warmup: learning rate warm" in events
    assert (root / "engine.out.log").read_text() == OUTPUT  # the file as the command wrote it
    if not blind:
        assert "eval_chunk_mae=3.5000" in pane and "'eval_loss': '1.523'" in pane, pane
        assert "new best eval_chunk_mae 3.5000" in events, events
        return
    assert not any(s in said for s in SECRETS), said
    assert "1.523" not in pane and "MAE" not in said and "eval_chunk_mae" not in said, said
    assert "best_model: its words hold a number" in events, events
    assert "hidden until the final read" in events
    assert "3 line(s) hidden" in pane, pane


@pytest.mark.parametrize("blind", [True, False], ids=["blinded", "open"])
async def test_the_attempts_timeline_hides_the_words_a_crash_left(tmp_path, blind):
    """A real process that printed the rule's value and crashed is attempt 1: while the read
    is blinded, the timeline says how it ended, not its last printed line."""
    import sys

    from fontaine_tui.core.host.memory import hostname
    from fontaine_tui.core.run import attempts
    from fontaine_tui.core.run.launcher import EngineProcess
    from fontaine_tui.core.runfolder import RunFolder
    from fontaine_tui.widgets.attempts_panel import AttemptsPanel

    root = run_folder(tmp_path, 750, blind=blind)
    folder = RunFolder(root)
    said = "print('eval_chunk_mae=3.5000', flush=True); raise SystemExit(1)"
    crashed = EngineProcess.start([sys.executable, "-c", said], folder)
    attempts.end(folder, attempts.begin(folder, "launch", crashed, hostname()), crashed.wait(30))
    assert "eval_chunk_mae=3.5000" in (root / "attempts.jsonl").read_text()  # kept as printed
    app = console(root / "train_log.jsonl", preset=load_preset(str(tmp_path / "blind.toml")))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 750)
        panel = app.screen.query_one(AttemptsPanel)
        await until(pilot, lambda: panel.display and "#1" in text(panel))
        shown = text(panel)
    assert "→ crashed" in shown, shown
    assert ("3.5000" in shown) is not blind, shown
