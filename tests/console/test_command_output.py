"""A launched [command] run's output on the monitor, live: its own pane, "command output".

A real [command] trainer (a few lines of Python writing metrics.jsonl) prints a first batch
of lines: a terminal escape, a Hugging Face token, its eval line (the blinded rule's value) and
a line far longer than a pane; then, once the test lets it go, a second batch, and exits. The
console that launched it shows each batch as it comes in the pane named "command output": the
escape as text, the token masked, a long line cut; blinded, the lines that may quote the read
are counted, not shown. engine.out.log keeps what the trainer printed.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from fontaine_tui.console import make_app
from fontaine_tui.core.follow.open import run_source
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.launch.targets.local import LocalTarget
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.model.launched import LaunchedRun
from fontaine_tui.model.session import TAIL_CHARS
from fontaine_tui.widgets.engine_tail import EngineTail
from tests.console.conftest import SIZE, until

TOKEN = "hf_" + "abcdefghijklmnopqrstuvwxyzABCDEFGH"  # 34 letters after hf_
LONG = "y" * 50_000

TRAINER = f"""import json, os, sys, time
out = os.environ["FONTAINE_OUTPUT_DIR"]
with open(os.path.join(out, "metrics.jsonl"), "a") as fh:
    for s in range(1, 11):
        rec = {{"step": s, "loss": 2.0 - s / 40}}
        if s % 10 == 0:
            rec["eval_loss"] = 0.4321
        fh.write(json.dumps(rec) + "\\n")
print("loading shards", flush=True)
print("colour \\x1b[31mred\\x1b[0m and \\x1b]0;title\\x07 done", flush=True)
print("pushing with {TOKEN} now", flush=True)
print("eval_loss=0.4321", flush=True)
print("{LONG}", flush=True)
while not os.path.exists(os.path.join(out, "go")):
    time.sleep(0.05)
print("saving model", flush=True)
"""


def _preset(tmp_path: Path, blind: bool) -> Path:
    (tmp_path / "trainer.py").write_text(TRAINER)
    path = tmp_path / "cmd.toml"
    path.write_text(f"""[run]
name = "cmd"
output_dir = "runs/cmd"
[command]
argv = ["{sys.executable}", "{tmp_path / "trainer.py"}"]
[source]
kind = "jsonl"
[verdict]
{"blind = true" if blind else ""}
metric = "eval_loss"
anchor_step = 10
endpoint_step = 20
healthy_max = 0.0
drift_min = 0.2
""")
    return path


@pytest.mark.parametrize("blind", [True, False], ids=["blinded", "open"])
async def test_a_command_runs_output_is_shown_live_masked_and_literal(tmp_path, monkeypatch, blind):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)
    preset = load_preset(_preset(tmp_path, blind))
    launched = LaunchedRun.launch(LocalTarget(), preset, poll_s=0.2)
    folder, handle = Path(launched.run_dir), launched.handle
    source = run_source(launched.run_dir, preset.source)
    app = make_app(
        source=source,
        preset=preset,
        process=handle,
        kind="launch",
        babysit_host=hostname(),
        launched=launched,
    )

    def pane(tail: EngineTail) -> str:
        return "\n".join([*tail.lines, str(tail.border_subtitle or "")])

    try:
        async with app.run_test(size=SIZE) as pilot:
            tail = app.screen.query_one(EngineTail)
            await until(pilot, lambda: app.session.tail_total >= 5, timeout=60)
            await until(pilot, lambda: any("pushing" in x for x in tail.lines), timeout=30)
            first = pane(tail)
            title = str(tail.border_title)
            (folder / "go").touch()  # the second batch: shown as it comes
            await until(pilot, lambda: any("saving model" in x for x in tail.lines), timeout=60)
            await until(pilot, lambda: launched.code is not None, timeout=60)
            shown = pane(tail)
    finally:
        if handle.poll() is None:
            os.killpg(handle.pid, signal.SIGKILL)
        handle.close()
    assert title == "command output", title
    assert "loading shards" in first and "saving model" not in first, first
    assert "saving model" in shown
    assert TOKEN not in shown and "pushing with *** now" in shown, shown
    assert "\x1b" not in shown and "\x07" not in shown, shown
    cut = [x for x in shown.split("\n") if x.startswith("yyy")]
    assert len(cut) == 1 and len(cut[0]) < TAIL_CHARS + 20 and cut[0].endswith("(line cut)")
    printed = (folder / "engine.out.log").read_text()
    assert TOKEN in printed and LONG in printed and "\x1b[31m" in printed  # as printed
    if blind:  # the value and the escape's digits may quote the read: counted, not shown
        assert "0.4321" not in shown and "eval_loss" not in shown, shown
        assert "\\x1b[31m" not in shown and "2 line(s) hidden" in shown, shown
    else:
        assert "eval_loss=0.4321" in shown, shown
        assert "colour \\x1b[31mred\\x1b[0m and \\x1b]0;title\\x07 done" in shown, shown
