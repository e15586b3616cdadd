"""The single-delta guard through the command line: `[verdict] delta_keys` held at launch.

A real engine's finished run (the demo's recorded single-process run, with its prereg.json) is
banked with `bank add`; presets of the same recipe name it as their comparator. One that
differs in platform.nproc only (its delta_keys) launches; one that differs in recipe.lr too is
refused naming it; with `--declare-delta recipe.lr` it launches, the ledger holds the declared
delta and `verdict` (card and --json) shows it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "fontaine_tui" / "demo"


def _cli(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "FONTAINE_BANK": str(home / "bank"),
        "FONTAINE_REGISTRY": str(home / "state" / "babysit.toml"),
        "XDG_DATA_HOME": str(home / "data"),
        "HF_HUB_OFFLINE": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def _preset(home: Path, name: str, **changes: str) -> str:
    """demo_1proc_cpu with the banked run as its comparator, delta_keys and `changes`."""
    text = (DEMO / "demo_1proc_cpu.toml").read_text()
    text = text.replace('bank = "demo_2rank_cpu"', 'bank = "base"')
    text = text.replace(
        'reference = "dist2"', 'reference = "dist2"\ndelta_keys = ["platform.nproc"]'
    )
    for key, value in changes.items():
        line = next(ln for ln in text.splitlines() if ln.startswith(f"{key} = "))
        text = text.replace(line, f"{key} = {value}")
    path = home / f"{name}.toml"
    path.write_text(text.replace('name = "demo_1proc_cpu"', f'name = "{name}"'))
    return str(path)


@pytest.fixture(scope="module")
def home(tmp_path_factory, corpus_dir) -> Path:
    """A folder with its own bank and registry, the demo's recorded run banked as `base`.

    The engines it launches train on the default corpus (corpus_dir: built once for the run),
    so a stop sent at once is not held up by the engine building it.
    """
    home = tmp_path_factory.mktemp("delta")
    shutil.copytree(DEMO / "run", home / "base_run")
    res = _cli(home, "bank", "add", "base_run", "--as", "base")
    assert res.returncode == 0, res.stderr
    return home


def _stop(home: Path, folder: str) -> None:
    """End the engine a test launched: SIGKILL to its process group, as the registry names it.

    What these tests hold is the launch and what it wrote; a `stop` would wait for the
    engine's two ranks to reach their first step before it acts (the stop itself is tested
    in tests/core/launch/test_real_engine.py).
    """
    import signal

    import psutil

    from fontaine_tui.core.runs.registry import Registry

    [entry] = [
        e
        for e in Registry(home / "state" / "babysit.toml").entries()
        if Path(e.run_dir) == home / folder
    ]
    assert entry.pid > 1, entry
    try:
        engine = psutil.Process(entry.pid)
        os.killpg(entry.pid, signal.SIGKILL)
    except (psutil.NoSuchProcess, ProcessLookupError):
        return
    deadline = time.monotonic() + 30
    while True:
        try:
            if engine.status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        assert time.monotonic() < deadline, "the engine outlived SIGKILL"
        time.sleep(0.05)


def test_a_delta_in_its_delta_keys_only_launches(home):
    preset = _preset(home, "nproc_only", nproc="2")
    res = _cli(home, "launch", preset, "--detach", "--output-dir", "runs/nproc")
    try:
        assert res.returncode == 0, res.stderr
        assert "launched nproc_only" in res.stdout
        assert "delta platform.nproc: ours 2, theirs 1" not in res.stderr  # ok: not a warning
        assert not (home / "runs" / "nproc" / "amendments.jsonl").exists()
    finally:
        if res.returncode == 0:
            _stop(home, "runs/nproc")


def test_another_difference_is_refused_one_line_per_key(home):
    preset = _preset(home, "with_lr", nproc="2", lr="2e-3", seed="1")
    res = _cli(home, "launch", preset, "--detach", "--output-dir", "runs/refused")
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.splitlines()
    assert "  recipe.lr: ours 0.002, theirs 0.001" in lines, res.stderr
    assert "  recipe.seed: ours 1, theirs 0" in lines, res.stderr
    assert lines[-1].startswith("fontaine-tui: error: refusing to launch: recipe.lr, recipe.seed")
    assert "Traceback" not in res.stderr and "platform.nproc" not in res.stderr
    assert not (home / "runs" / "refused" / "prereg.json").exists()  # nothing written


@pytest.mark.slow
def test_a_declared_delta_launches_into_the_ledger_and_the_verdict(home):
    preset = _preset(home, "declared_lr", nproc="2", lr="2e-3")
    folder = home / "runs" / "declared"
    res = _cli(
        home,
        "launch",
        preset,
        "--detach",
        "--output-dir",
        "runs/declared",
        "--declare-delta",
        "recipe.lr",
    )
    assert res.returncode == 0, res.stderr
    try:
        assert "recipe.lr: ours 0.002, theirs 0.001: declared at launch" in res.stderr
        (line,) = (folder / "amendments.jsonl").read_text().splitlines()
        rule = json.loads(line)["rule"]
        assert (rule["kind"], rule["key"], rule["ours"], rule["theirs"]) == (
            "delta",
            "recipe.lr",
            "0.002",
            "0.001",
        )
        deadline = time.monotonic() + 150  # the engine's first line, so the run has a log
        while not (folder / "train_log.jsonl").exists() or not (
            (folder / "train_log.jsonl").stat().st_size
        ):
            assert time.monotonic() < deadline, "the engine wrote no log"
            time.sleep(0.5)
    finally:
        _stop(home, "runs/declared")
    card = _cli(home, "verdict", "runs/declared")
    assert "amendment 1 (delta, ledger): declared: recipe.lr: ours 0.002, theirs 0.001" in (
        card.stdout
    ), card.stdout + card.stderr
    doc = json.loads(_cli(home, "verdict", "runs/declared", "--json").stdout)
    (declared,) = doc["declared_deltas"]
    assert (declared["key"], declared["ours"], declared["theirs"]) == ("recipe.lr", 0.002, 0.001)
    assert declared["comparator"].startswith("base@") and declared["amendment"] == 1
    assert doc["amendments"][0]["status"] == "declared"


def test_declare_delta_of_a_key_that_does_not_differ_is_refused(home):
    preset = _preset(home, "same_lr", nproc="2")
    res = _cli(
        home,
        "launch",
        preset,
        "--detach",
        "--output-dir",
        "runs/same",
        "--declare-delta",
        "recipe.lr",
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert "--declare-delta recipe.lr: not a differing key (base@" in res.stderr
    assert not (home / "runs" / "same").exists()
