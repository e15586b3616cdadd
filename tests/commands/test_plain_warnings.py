"""Warnings on every plain path: replay --plain and attach --plain say what the console shows.

Each warning is said once when it starts and once when it clears, in the console's warnings
panel's words; a clean log says no warning at all.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict import prereg
from fontaine_tui.core.verdict.record import EXIT_CODES
from tests.logs import records, write_log
from tests.sshd_helper import HOST_ALIAS

ROOT = Path(__file__).parents[2]
LOG = "train_log.jsonl"
SAID = re.compile(r"^(INFO|WARN|ALERT|CLEAR) +(\S+) since \d\d:\d\d:\d\dZ: (.*)$")


def cli(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def said(out: str) -> list[tuple[str, str, str]]:
    """The warning lines of a plain report: (severity, rule, words)."""
    return [m.groups() for ln in out.splitlines() if (m := SAID.match(ln))]  # type: ignore[misc]


def test_replay_plain_says_a_nan_loss_and_a_starving_data_wait_once(tmp_path):
    recs = records()
    for r in recs:
        if r.get("kind") == "train" and 400 <= r["step"] <= 430:
            r["data_s"] = 0.45  # 90 % of a 0.5 s step spent waiting for data
        if r.get("kind") == "train" and r["step"] == 600:
            r["loss"] = math.nan
    log = write_log(tmp_path / "run" / LOG, recs)
    res = cli("replay", str(log), "--preset", "demosonly_1gpu", "--plain")
    assert res.returncode == EXIT_CODES["AMBIGUOUS"], res.stderr  # the verdict's code
    lines = said(res.stdout)
    alerts = [(sev, rule) for sev, rule, _ in lines if sev != "INFO"]
    assert alerts == [
        ("WARN", "starvation"),
        ("CLEAR", "starvation"),
        ("ALERT", "nan-loss"),
        ("CLEAR", "nan-loss"),
    ]
    words = dict(((sev, rule), text) for sev, rule, text in lines)
    assert words[("WARN", "starvation")].startswith("input starvation: waiting for data")
    assert words[("ALERT", "nan-loss")] == "loss is nan at step 600"
    out = res.stdout.splitlines()  # said where it happens: after step 600, before 601
    nan = next(i for i, ln in enumerate(out) if ln.startswith("ALERT  nan-loss"))
    assert out[nan - 1].startswith("step 600/1000") and out[nan + 1].startswith("step 601/")


def test_a_clean_log_says_no_warning(tmp_path):
    log = write_log(tmp_path / "run" / LOG)
    res = cli("replay", str(log), "--preset", "demosonly_1gpu", "--plain")
    assert res.returncode == EXIT_CODES["AMBIGUOUS"], res.stderr  # the verdict's code
    # the first poll is the panel's report, not a warning; nothing else is said
    assert [(sev, rule) for sev, rule, _ in said(res.stdout)] == [("INFO", "first-poll")]


WRITER = textwrap.dedent(
    """
    import json, math, sys, time
    log = sys.argv[1]
    def put(f, rec):
        f.write(json.dumps(rec) + "\\n")
        f.flush()
    def train(step, loss=1.0):
        return {"kind": "train", "step": step, "time": time.time(), "loss": loss,
                "ar_ce": 0.8, "flow_loss": 0.2, "lr": 3e-4, "grad_norm": 1.0,
                "step_s": 0.05, "data_s": 0.001, "samples": step * 96}
    with open(log, "a") as f:
        put(f, {"kind": "event", "step": 0, "time": time.time(), "event": "start",
                "detail": ""})
        for step in range(1, 21):
            put(f, train(step))
            time.sleep(0.05)
        time.sleep(float(sys.argv[2]))  # the run goes quiet: a stall
        put(f, train(21, math.nan))
        for step in range(22, 26):
            time.sleep(0.05)
            put(f, train(step))
        put(f, {"kind": "event", "step": 25, "time": time.time(), "event": "end",
                "detail": "finished"})
    """
)


def test_attach_plain_says_a_stall_and_a_nan_as_a_live_log_shows_them(tmp_path):
    preset_file = tmp_path / "quick_stall.toml"
    text = (ROOT / "presets" / "demosonly_1gpu.toml").read_text()
    preset_file.write_text(text.replace("[gates]\n", "[gates]\nstall_min_s = 1.5\n", 1))
    run = tmp_path / "run"
    run.mkdir()
    prereg.freeze(RunFolder(run), load_preset(str(preset_file)), ["python", "-m", "x"], "h")
    (run / LOG).write_text("")
    attach = subprocess.Popen(
        [sys.executable, "-m", "fontaine_tui", "attach", str(run), "--plain", "--until-end"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    writer = subprocess.run(
        [sys.executable, "-c", WRITER, str(run / LOG), "5"], timeout=60, check=True
    )
    assert writer.returncode == 0
    out, err = attach.communicate(timeout=60)
    assert attach.returncode == EXIT_CODES["UNDECIDABLE"], err  # the verdict's code
    lines = said(out)
    seen = [(sev, rule) for sev, rule, _ in lines if rule in ("stall", "nan-loss")]
    assert seen[0][0] in ("WARN", "ALERT") and seen[0][1] == "stall", out
    assert ("CLEAR", "stall") in seen and ("ALERT", "nan-loss") in seen
    assert seen.index(("CLEAR", "stall")) < seen.index(("ALERT", "nan-loss"))
    assert seen.count(("ALERT", "nan-loss")) == 1
    text = out.splitlines()  # the stall said during the quiet, the NaN as its record lands
    stalled = next(i for i, ln in enumerate(text) if SAID.match(ln) and " stall " in ln)
    step21 = next(i for i, ln in enumerate(text) if ln.startswith("step 21/"))
    nan = next(i for i, ln in enumerate(text) if ln.startswith("ALERT  nan-loss"))
    assert stalled < step21 < nan and text[nan].endswith(": loss is nan at step 21")
    assert text[stalled - 1].startswith("step 20/")  # said in the quiet, before any record


def test_a_foreign_replay_gets_only_the_rules_that_apply_to_it(tmp_path):
    """A Hugging Face Trainer's run: its own loss judged, none of the engine's columns or advice."""
    from transformers import TrainerState

    history: list[dict] = [
        {"loss": math.nan if s == 60 else 2.0 - s / 200, "step": s} for s in range(10, 201, 10)
    ]
    history += [{"eval_loss": 1.5 - s / 1000, "step": s} for s in (50, 100, 150, 200)]
    run = tmp_path / "hf"
    run.mkdir()
    TrainerState(global_step=200, max_steps=200, log_history=history).save_to_json(
        str(run / "trainer_state.json")
    )
    res = cli("replay", str(run), "--preset", "own_trainer_hf", "--plain")
    assert res.returncode == 0, res.stderr
    lines = said(res.stdout)
    assert [(sev, rule) for sev, rule, _ in lines if sev != "INFO"] == [
        ("ALERT", "nan-loss"),
        ("CLEAR", "nan-loss"),
    ], res.stdout
    assert lines[[r for _, r, _ in lines].index("nan-loss")][2] == "loss is nan at step 60"
    assert "fontaine-tui launch" not in res.stdout and "engine" not in res.stdout


@pytest.mark.ssh
def test_attach_plain_over_ssh_says_the_warnings_too(sshd, tmp_path):
    recs = records()
    for r in recs:
        if r.get("kind") == "train" and r["step"] == 600:
            r["loss"] = math.nan
    run = tmp_path / "remote run"
    run.mkdir()
    prereg.freeze(RunFolder(run), load_preset("demosonly_1gpu"), ["python", "-m", "x"], "h")
    write_log(run / LOG, recs)
    res = cli(
        "attach", f"{HOST_ALIAS}:{run}", "--ssh-config", str(sshd.config), "--plain", "--until-end"
    )
    assert res.returncode == EXIT_CODES["AMBIGUOUS"], res.stderr  # the verdict's code
    nan = [(sev, text) for sev, rule, text in said(res.stdout) if rule == "nan-loss"]
    assert nan == [("ALERT", "loss is nan at step 600"), ("CLEAR", "no longer seen")]
