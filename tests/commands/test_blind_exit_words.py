"""A blinded run's last words at its exit: hidden where a surface says how it ended.

A [command] trainer (a Python script writing JSONL, no engine) under a blind preset prints
`eval_loss=0.123` as its last line and exits 1 before its endpoint. `launch --plain` reads
the exit's cause from that line (a crash), and attempts.jsonl keeps it as read (the cause is
judged from it), but no surface that shows the exit quotes it: the plain lines (the
exited-early alert, the exit's description), the posts (the incident, the final verdict's),
`runs -j` of a run whose watcher died before it recorded the exit. A run folder of
the engine's log that ends with an error event quoting the read is shown by `inspect` without
its words. The same runs without the blind keep the words. Real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.run.attempts import read_attempts
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Registry
from tests.commands.test_blind import cli, run_folder
from tests.core.notify.server import Hook
from tests.logs import T0, records_upto, write_log

pytestmark = pytest.mark.slow
LAST = "eval_loss=0.123"
TRAINER = """import json, sys
from pathlib import Path
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
with open(out / "log.jsonl", "a") as f:
    for step in range(1, 16):
        f.write(json.dumps({{"step": step, "train/loss": 1.0 / step}}) + "\\n")
        if step % 10 == 0:
            f.write(json.dumps({{"step": step, "eval/chunk_mae": 2.9101}}) + "\\n")
print("training", flush=True)
print({last!r}, flush=True)
sys.exit(1)
"""


def launch(tmp_path: Path, blind: bool, hook: Hook) -> tuple[str, RunFolder, dict[str, str]]:
    """The trainer launched with `launch --plain`: its output, its run folder, the env."""
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER.format(last=LAST))
    (tmp_path / "crash.toml").write_text(f"""[run]
name = "crash"
output_dir = "runs/crash"

[command]
argv = ["{sys.executable}", "{script}", "{{output_dir}}"]

[source]
kind = "jsonl"
eval_every = 10

[verdict]
metric = "eval/chunk_mae"
anchor_step = 10
endpoint_step = 60
healthy_max = 0.3
drift_min = 1.0
{"blind = true" if blind else ""}
""")
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("FONTAINE_REGISTRY",)},
        "PYTHONUNBUFFERED": "1",
        "FONTAINE_USER": "alice",
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "FONTAINE_NOTIFY": hook.url("/hooks/T"),
    }
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "fontaine_tui",
            "launch",
            "./crash.toml",
            "--plain",
            "--poll",
            "0.3",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return res.stdout + res.stderr, RunFolder(tmp_path / "runs" / "crash"), env


@pytest.mark.parametrize("blind", [True, False], ids=["blinded", "open"])
def test_the_last_printed_line_is_hidden_where_a_blinded_exit_is_shown(tmp_path, blind):
    hook = Hook()
    try:
        out, folder, env = launch(tmp_path, blind, hook)
        posts = json.dumps([json.loads(r.body) for r in hook.requests])
    finally:
        hook.close()
    [attempt] = read_attempts(folder)
    assert (attempt.cause, attempt.detail) == ("crashed", LAST), (attempt, out)  # kept as read
    assert "run ended early at step 15 of 60" in out, out
    # a watcher that died before it recorded the exit: `runs` says it from attempts.jsonl
    registry = Registry(tmp_path / "state" / "fontaine-tui" / "babysit.toml")
    registry.update(str(folder.root), hostname(), status="running")
    runs = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "runs", "-j"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert runs.returncode == 0, runs.stderr
    [row] = [json.loads(line) for line in runs.stdout.splitlines()]
    assert "crashed at step 15, exit 1: " in row["detail"], row
    said = {"launch": out, "posts": posts, "runs": runs.stdout}
    if not blind:
        assert f"command failed (exit 1) at step 15: {LAST}" in out, out
        assert LAST in row["detail"], row
        return
    for where, text in said.items():
        assert "0.123" not in text, (where, text)
    assert "command failed (exit 1) at step 15: its words hold a number" in out, out
    assert "incident: attempt 1 crashed" in posts, posts
    assert "exit 1: its words hold a number" in row["detail"], row


ERROR = "diverged: eval_chunk_mae 3.5000"


@pytest.mark.parametrize("blind", [True, False], ids=["blinded", "open"])
def test_inspect_hides_the_words_of_a_blinded_run_s_last_error(tmp_path, blind):
    root = run_folder(tmp_path, 750, blind=blind)
    end = {"kind": "event", "step": 760, "time": T0 + 400, "event": "error", "detail": ERROR}
    write_log(root / "train_log.jsonl", [*records_upto(750), end])
    shown = cli(tmp_path, "inspect", str(root))
    assert shown.returncode == 0, shown.stderr
    [ended] = [ln for ln in shown.stdout.splitlines() if ln.startswith("ended    ")]
    doc = json.loads(cli(tmp_path, "inspect", str(root), "-j").stdout)
    if not blind:
        assert ended == f"ended    with an error at step 760 ({ERROR})", ended
        assert doc["ended"]["detail"] == ERROR
        return
    assert ended.startswith("ended    with an error at step 760 (its words hold a number"), ended
    assert "3.5000" not in shown.stdout + json.dumps(doc), doc["ended"]
    assert doc["ended"]["detail"].startswith("its words hold a number"), doc["ended"]
