"""The stop_on_lock gate decides as the verdict does, from the command line.

A [command] trainer (a Python script writing JSONL, no engine) is launched with
`launch --plain` under `[gates] stop_on_lock = true`. The gate stops it only on a lock the
verdict of the stopped run then holds (the run's own probes contradicting the lock's premise
keep it going), it counts the probe at an endpoint off the probe cadence, and the words of a
stop on a blinded read carry no label (stdout, attempts.jsonl and the posted stop)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.run.attempts import read_attempts
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.record import EXIT_CODES
from tests.core.notify.server import Hook

pytestmark = pytest.mark.slow
TIMEOUT = 120

TRAINER = """import json, signal, sys, time
from pathlib import Path
out, steps, every = Path(sys.argv[1]), {steps}, {every}
values = {values}  # the eval value from each of these steps on
out.mkdir(parents=True, exist_ok=True)
stop = []
signal.signal(signal.SIGINT, lambda *a: stop.append(1))
with open(out / "log.jsonl", "a") as f:
    for step in range(1, steps + 1):
        time.sleep({sleep})
        f.write(json.dumps({{"step": step, "train/loss": 1.0 / step}}) + "\\n")
        if step % every == 0 or step == steps:
            value = [v for s, v in sorted(values.items()) if s <= step][-1]
            f.write(json.dumps({{"step": step, "eval/chunk_mae": value}}) + "\\n")
        f.flush()
        if stop:
            sys.exit(130)
"""


def launch(
    tmp_path: Path,
    values: dict[int, float],
    steps: int,
    every: int,
    verdict: str,
    sleep: float = 0.03,
    **env: str,
) -> tuple[subprocess.CompletedProcess[str], RunFolder]:
    """Launch the trainer under a stop_on_lock preset, `launch --plain`; its run folder."""
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER.format(steps=steps, every=every, values=values, sleep=sleep))
    (tmp_path / "gate.toml").write_text(f"""[run]
name = "gate"
output_dir = "runs/gate"

[command]
argv = ["{sys.executable}", "{script}", "{{output_dir}}"]

[source]
kind = "jsonl"

[verdict]
metric = "eval/chunk_mae"
endpoint_step = {steps}
{verdict}
[gates]
stop_on_lock = true
""")
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "launch", "./gate.toml", "--plain", "--poll", "0.3"],
        cwd=tmp_path,
        env={
            **{k: v for k, v in os.environ.items() if k != "FONTAINE_NOTIFY"},
            "PYTHONUNBUFFERED": "1",
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    return res, RunFolder(tmp_path / "runs" / "gate")


def verdict_json(tmp_path: Path, folder: RunFolder) -> dict:
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "verdict", str(folder.root), "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    return json.loads(res.stdout)


def test_the_gate_never_stops_a_run_on_a_lock_the_verdict_rejects(tmp_path: Path) -> None:
    """The read locks at once, but it moved 1.0 between two probes where the lock assumes at
    most 0.5: the verdict would not take that lock for the endpoint's read, so the gate does
    not stop the run on it, and the run reads its endpoint."""
    res, folder = launch(
        tmp_path,
        {0: 3.0, 20: 4.0},
        100,
        10,
        "anchor_step = 10\nhealthy_max = 50.0\ndrift_min = 100.0\nmax_probe_change = 0.5\n",
    )
    out = res.stdout + res.stderr
    assert "stop_on_lock stops the run" not in out, out
    [attempt] = read_attempts(folder)
    assert attempt.cause != "decision-locked" and attempt.last_step == 100, attempt
    doc = verdict_json(tmp_path, folder)
    assert (doc["verdict"], doc["provisional"], doc["read_step"]) == ("HEALTHY", False, 100)
    assert res.returncode == EXIT_CODES["HEALTHY"], out


def test_a_stopped_run_counts_the_probe_at_an_endpoint_off_the_cadence(tmp_path: Path) -> None:
    """Probes every 40 steps and at the endpoint, 300: from step 280 one probe is still to
    come, which may move the read by max_probe_change (0.5) and does: the full run reads
    AMBIGUOUS at 300. The gate does not stop the run at 280 on a lock that counted none."""
    res, folder = launch(
        tmp_path,
        {0: 3.0, 280: 3.2, 300: 3.6},
        300,
        40,
        "anchor_step = 40\nhealthy_max = 0.3\ndrift_min = 5.0\nmax_probe_change = 0.5\n",
        sleep=0.01,
    )
    out = res.stdout + res.stderr
    assert "stop_on_lock stops the run" not in out, out
    doc = verdict_json(tmp_path, folder)
    assert (doc["verdict"], doc["provisional"], doc["read_step"]) == ("AMBIGUOUS", False, 300)
    assert res.returncode == EXIT_CODES["AMBIGUOUS"], out


def test_the_stop_on_a_blinded_read_does_not_say_its_label(tmp_path: Path) -> None:
    hook = Hook()
    try:
        res, folder = launch(
            tmp_path,
            {0: 3.0},
            100,
            10,
            "anchor_step = 10\nhealthy_max = 50.0\ndrift_min = 100.0\n"
            "max_probe_change = 0.5\nblind = true\n",
            FONTAINE_NOTIFY=hook.url("/hooks/T"),
        )
    finally:
        hook.close()
    out = res.stdout
    assert "decision locked at step 10 (hidden (blinded)): stop_on_lock stops the run" in out, out
    [attempt] = read_attempts(folder)
    assert (attempt.cause, attempt.detail) == (
        "decision-locked",
        "decision locked at step 10 (hidden (blinded))",
    )
    before = out[: out.index("\npreset gate ")]  # the final card, locked and stopped, shows it
    assert "HEALTHY" not in before, before
    posts = [json.loads(r.body) for r in hook.requests]
    stops = [p for p in posts if "stopped: decision-locked" in p["title"]]
    assert stops and all("HEALTHY" not in json.dumps(p) for p in stops), posts
    assert "VERDICT: HEALTHY  [final]  stopped at step" in out
    assert res.returncode == EXIT_CODES["HEALTHY"], out + res.stderr
