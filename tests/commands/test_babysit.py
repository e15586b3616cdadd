"""`fontaine-tui babysit`: a detached real engine run watched to its end without a console
(polls, probe reads, the final verdict posted to a real webhook; the exit and the attempt
recorded), and the systemd unit it prints."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.commands.babysit import unit
from fontaine_tui.core.run.attempts import read_attempts
from fontaine_tui.core.run.logtail import read_tail
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Registry
from fontaine_tui.core.watch.babysit import read_polls
from tests.core.notify.server import Hook

TIMEOUT = 300


def env_for(tmp_path: Path, **more: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("FONTAINE_NOTIFY", None)
    return {**env, **more}


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.usefixtures("corpus_dir")  # the default corpus the engine trains on, built once
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the engine needs torch")
def test_babysit_watches_a_detached_run_to_its_end(tmp_path: Path, registry_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    launcher = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fontaine_tui",
            "launch",
            "smoke",
            "--plain",
            "--output-dir",
            "run",
            "--poll",
            "0.5",
        ],
        cwd=tmp_path,
        env=env_for(tmp_path),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    [entry] = [None]
    try:
        deadline = time.monotonic() + TIMEOUT
        while read_tail(folder).last_step < 2:
            assert launcher.poll() is None, launcher.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(launcher.pid, signal.SIGINT)  # Ctrl-C: the console detaches
        launcher.communicate(timeout=30)
        assert launcher.returncode == 130
        [entry] = Registry(registry_path).entries()
        hook = Hook()
        res = subprocess.run(
            [sys.executable, "-m", "fontaine_tui", "babysit", "smoke", "--poll", "0.3"],
            cwd=tmp_path,
            env=env_for(tmp_path, FONTAINE_NOTIFY=hook.url("/hooks/TOKEN42")),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    finally:
        if entry is not None:
            try:
                os.killpg(entry.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert res.returncode == 0, res.stdout + res.stderr
    assert "smoke: babysitting" in res.stdout and "Traceback" not in res.stderr
    assert "smoke: engine finished at step 40" in res.stdout
    posts = [json.loads(r.body) for r in hook.requests]
    hook.close()
    titles = [p["title"] for p in posts]
    assert titles[-1].startswith("smoke: VERDICT ")
    assert "engine finished at step 40" in posts[-1]["text"]
    probe_steps = [p["step"] for p in posts if "probe at step" in p["title"]]
    assert probe_steps and probe_steps == sorted(probe_steps) and probe_steps[-1] == 40
    # the exit the babysitter saw is in the registry and closes the attempt
    [after] = Registry(registry_path).entries()
    assert (after.status, after.last_step) == ("finished", 40)
    [attempt] = read_attempts(folder)
    assert (attempt.kind, attempt.cause, attempt.last_step) == ("launch", "finished", 40)
    # babysit.jsonl keeps what babysit posted (and its polls, when one fell due before the end:
    # the first poll may be the launch's, taken before its Ctrl-C)
    lines = [json.loads(x) for x in (folder.root / "babysit.jsonl").read_text().splitlines()]
    told = {
        (x["what"], x["step"]) for x in lines if x["watcher"] == "babysit" and x["kind"] == "told"
    }
    assert ("verdict", 40) in told and ("probe", 40) in told, lines
    assert read_polls(folder.root / "babysit.jsonl")  # the run's polls, whoever took them
    assert "TOKEN42" not in res.stdout + res.stderr
    for path in folder.root.rglob("*"):
        if path.is_file():
            assert b"TOKEN42" not in path.read_bytes(), path


def test_the_unit_runs_this_babysitter_with_its_paths_literal(tmp_path: Path) -> None:
    args = argparse.Namespace(poll=30.0, ssh_config=None, runs=["my run", "h:/x $HOME"])
    env = {
        "FONTAINE_REGISTRY": "/srv/state 100%/babysit.toml",
        "FONTAINE_NOTIFY": "https://x/y",
        "XDG_CONFIG_HOME": "/home/u/.config",
    }
    text = unit(args, env, python="/opt/my env/bin/python")
    [exec_line] = [ln for ln in text.splitlines() if ln.startswith("ExecStart=")]
    # systemd's quoting: "..." words, \\ and \" escaped, % and $ doubled
    words = shlex.split(exec_line[len("ExecStart=") :].replace("%%", "%").replace("$$", "$"))
    assert words == [
        "/opt/my env/bin/python",
        "-m",
        "fontaine_tui",
        "babysit",
        "--poll",
        "30",
        "my run",
        "h:/x $HOME",
    ]
    assert 'Environment="FONTAINE_REGISTRY=/srv/state 100%%/babysit.toml"' in text
    assert "FONTAINE_NOTIFY=" not in text.replace("# FONTAINE_NOTIFY", "")  # a secret
    assert "[Install]\nWantedBy=default.target" in text
    analyze = shutil.which("systemd-analyze")
    if analyze:  # where systemd is installed, it checks the unit itself
        path = tmp_path / "fontaine-babysit.service"
        path.write_text(unit(argparse.Namespace(poll=30.0, ssh_config=None, runs=[]), {}))
        res = subprocess.run(
            [analyze, "verify", "--user", str(path)], capture_output=True, text=True
        )
        assert "fontaine-babysit.service:" not in res.stderr, res.stderr


def test_babysit_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    for argv, expected in (
        (["--poll", "0"], "--poll: expected a positive number"),
        (["no-such-run"], "no-such-run: not watched"),
    ):
        res = subprocess.run(
            [sys.executable, "-m", "fontaine_tui", "babysit", *argv],
            cwd=tmp_path,
            env=env_for(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert expected in res.stdout + res.stderr and "Traceback" not in res.stderr
        assert res.returncode == (2 if argv[0] == "--poll" else 1)
    # nothing registered, one look: nothing to do
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "babysit", "--once"],
        cwd=tmp_path,
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0 and res.stderr == ""


@pytest.mark.ssh
def test_babysit_a_run_over_ssh_to_its_end(sshd, tmp_path: Path) -> None:
    """A run on the far side of a real sshd (a folder with a space in its name): the babysitter
    follows its log over SSH, polls with the far host's telemetry, posts the final read when
    the log ends, keeps its polls beside the registry (not in the remote folder), and closes
    its master connection."""
    from fontaine_tui.core.preset.find import load_preset
    from fontaine_tui.core.verdict import prereg
    from tests.logs import write_log
    from tests.sshd_helper import HOST_ALIAS, processes_mentioning

    run = tmp_path / "remote run"
    run.mkdir()
    prereg.freeze(
        RunFolder(run), load_preset("demosonly_1gpu"), ["python", "-m", "fontaine_engine"], "h"
    )
    write_log(run / "train_log.jsonl")
    hook = Hook()
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "fontaine_tui",
            "babysit",
            f"{HOST_ALIAS}:{run}",
            "--poll",
            "0.3",
            "--ssh-config",
            str(sshd.config),
        ],
        cwd=tmp_path,
        env=env_for(tmp_path, FONTAINE_NOTIFY=hook.url()),
        capture_output=True,
        text=True,
        timeout=120,
    )
    posts = [json.loads(r.body) for r in hook.requests]
    hook.close()
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"babysitting ssh {HOST_ALIAS}:{run}" in res.stdout
    assert posts[-1]["title"] == "grasp_sft_v2_demosonly_1gpu_disc: VERDICT AMBIGUOUS"
    assert "the log ended at step 1000" in posts[-1]["text"]
    assert not (run / "babysit.jsonl").exists()  # the remote folder is only read
    [kept] = list((tmp_path / "state" / "watch").glob("*.babysit.jsonl"))
    [poll] = read_polls(kept)
    assert poll["kind"] == "first" and poll["watcher"] == "babysit"
    assert not processes_mentioning(str(sshd.config), exe="ssh")
