"""The real engine, launched from the CLI on presets/smoke.toml (40 steps, CPU).

One uninterrupted launch, and one SIGKILLed mid-run then resumed from its checkpoint."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.run.logtail import read_tail
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Registry
from fontaine_tui.core.verdict.prereg import Prereg, read_prereg
from fontaine_tui.core.verdict.record import EXIT_CODES

if importlib.util.find_spec("torch") is None:  # the engine needs it (not imported here)
    pytest.skip("torch is not installed", allow_module_level=True)
# the engines it launches train on the default corpus: built once for the run (corpus_dir)
pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.usefixtures("corpus_dir")]
TIMEOUT = 300


def launch(
    cwd: Path,
    *extra: str,
    code: Path | None = None,
    notify: str = "",
    env: dict[str, str] | None = None,
    preset: str = "smoke",
) -> subprocess.Popen:
    """`launch smoke --plain` (or `preset`); with `code`, the engine package is imported from
    there; with `notify`, FONTAINE_NOTIFY (the user's config.toml kept out either way); `env`
    added."""
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "XDG_CONFIG_HOME": str(cwd / "config"),
        **(env or {}),
    }
    env.pop("FONTAINE_NOTIFY", None)
    if notify:
        env["FONTAINE_NOTIFY"] = notify
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fontaine_tui",
            "launch",
            preset,
            "--plain",
            "--output-dir",
            "run",
            "--poll",
            "0.5",
            *extra,
        ],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@dataclass
class SmokeRun:
    """One `launch smoke --plain` to its end, as test_launch_smoke_end_to_end reads it."""

    folder: RunFolder
    registry: Path
    prereg_when_log_appeared: Prereg
    out: str
    err: str
    returncode: int
    posts: list[dict]
    paths: list[str]


SECRET = "/hooks/SECRETTOKEN"


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> SmokeRun:
    """One launch of smoke to its end for two tests, with its own registry and bank, and a
    notification destination: a real JSON webhook on 127.0.0.1.

    test_launch_smoke_end_to_end checks the run, and
    test_bank_a_real_run_and_launch_another_against_it banks it.
    """
    from tests.core.notify.server import Hook

    cwd = tmp_path_factory.mktemp("smoke")
    registry = cwd / "state" / "babysit.toml"
    hook = Hook()
    folder = RunFolder(cwd / "run")
    env = {"FONTAINE_REGISTRY": str(registry), "FONTAINE_BANK": str(cwd / "bank")}
    proc = launch(cwd, notify=hook.url(SECRET), env=env)
    # prereg.json must already be complete when the log's first line appears
    deadline = time.monotonic() + TIMEOUT
    while not (folder.log.exists() and folder.log.stat().st_size > 0):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.005)
    prereg_when_log_appeared = read_prereg(folder)
    out, err = proc.communicate(timeout=TIMEOUT)
    posts = [json.loads(r.body) for r in hook.requests]
    paths = [r.path for r in hook.requests]
    hook.close()
    return SmokeRun(
        folder, registry, prereg_when_log_appeared, out, err, proc.returncode, posts, paths
    )


@pytest.mark.xdist_group("smoke_run")  # one worker, one launch for both
def test_launch_smoke_end_to_end(smoke_run: SmokeRun) -> None:
    """... with a notification destination: a real JSON webhook on 127.0.0.1, whose secret
    path never shows in the output."""
    folder, out, err = smoke_run.folder, smoke_run.out, smoke_run.err
    prereg_when_log_appeared = smoke_run.prereg_when_log_appeared
    store = load_log(folder.log)
    first = store.metas[0]
    assert prereg_when_log_appeared.launched_ts < first.time
    assert folder.prereg.stat().st_mtime < first.time
    prereg = read_prereg(folder)
    assert prereg == prereg_when_log_appeared  # frozen: never rewritten
    assert list(first.argv[1:]) == list(prereg.argv[3:])  # the engine ran the frozen argv
    # the run reached its last step
    assert store.last_step == 40 and store.events[-1].event == "end"
    assert "engine finished at step 40 (last checkpoint step 40), exit 0" in out
    # exit recorded in the registry
    [entry] = Registry(smoke_run.registry).entries()
    assert (entry.status, entry.exit_code, entry.last_step) == ("finished", 0, 40)
    assert entry.run_dir == str(folder.root) and entry.preset_sha256 == prereg.preset_sha256
    # verdict computed: printed, verdict.json written, exit code is the verdict's
    verdict = json.loads(folder.verdict.read_text())
    assert verdict["read_step"] == 40 and verdict["provisional"] is False
    assert f"VERDICT: {verdict['verdict']}  [final]" in out
    assert smoke_run.returncode == EXIT_CODES[verdict["verdict"]]
    # the notifications: launch, each probe's read, the final verdict with its label
    posts = smoke_run.posts
    assert smoke_run.paths and all(path == SECRET for path in smoke_run.paths)
    titles = [m["title"] for m in posts]
    assert titles[0] == "smoke: launched" and posts[0]["level"] == "info"
    probes = [m for m in posts if m["title"].startswith("smoke: probe at step ")]
    assert [m["step"] for m in probes] == [10, 20, 30, 40]
    assert "PROVISIONAL" in probes[0]["text"] and "final" in probes[-1]["text"]
    assert titles[-1] == f"smoke: VERDICT {verdict['verdict']}"
    assert f"VERDICT: {verdict['verdict']}  [final]" in posts[-1]["text"]
    assert "smoke: first poll" in titles  # the document's first look, then babysit.jsonl
    from fontaine_tui.core.watch.babysit import read_polls

    [poll, *_] = read_polls(folder.root / "babysit.jsonl")
    assert (poll["kind"], poll["watcher"]) == ("first", "launch --plain")
    assert poll["s_per_step"] > 0 and poll["ram_total"] > 0
    for path in folder.root.rglob("*"):  # no file the run wrote holds the token
        if path.is_file():
            assert b"SECRETTOKEN" not in path.read_bytes(), path
    assert "SECRETTOKEN" not in out + err and "notification" not in out + err
    assert "verdict: " in out and "probe step 20:" in out  # followed line by line
    # the first poll, said once: the babysitter's (its numbers), not the first-poll warning
    [first] = [ln for ln in out.splitlines() if "first poll" in ln]
    assert first.startswith("babysit first poll: step ") and " s/step" in first, out
    assert "Traceback" not in err


def test_sigkill_mid_run_is_an_incident_and_resume_continues(
    tmp_path: Path, registry_path: Path
) -> None:
    """... posted as an incident, each start an attempt in attempts.jsonl; and the resume runs
    edited engine code: the verdict names both code identities. Smoke at half its length (20
    steps, a checkpoint every 10): the kill and the resume need no more."""
    import shutil

    import fontaine_engine
    from fontaine_tui.core.run.attempts import read_attempts
    from tests.core.launch.conftest import preset_variant
    from tests.core.notify.server import Hook

    short = preset_variant(
        tmp_path,
        "smoke",
        name="smoke",
        steps="20",
        save_every="10",
        anchor_step="10",
        endpoint_step="20",
    )

    code = tmp_path / "code"
    shutil.copytree(
        fontaine_engine.__path__[0],
        code / "fontaine_engine",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    folder = RunFolder(tmp_path / "run")
    hook = Hook()
    proc = launch(tmp_path, code=code, notify=hook.url(), preset=str(short))
    pid = None
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:  # past the step-10 checkpoint
            tail = read_tail(folder)
            if tail.checkpoint_step == 10 and tail.last_step >= 12:
                break
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        [entry] = Registry(registry_path).entries()
        pid = entry.pid
        os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
    finally:
        if pid is not None:  # loader workers orphaned by the kill
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    killed_at = read_tail(folder).last_step
    assert killed_at >= 12
    assert proc.returncode == 1
    incident = f"killed by SIGKILL at step {killed_at} (last checkpoint step 10)"
    assert f": run ended early at step {killed_at} of 20: engine {incident}" in out
    assert "ALERT  exited-early since " in out  # the console's warnings panel's words
    [entry] = Registry(registry_path).entries()
    assert (entry.status, entry.last_step) == ("killed", killed_at)
    assert json.loads(folder.verdict.read_text())["provisional"] is True
    [first] = read_attempts(folder)
    assert (first.number, first.kind, first.cause, first.last_step) == (
        1,
        "launch",
        "killed",
        killed_at,
    )
    posts = [json.loads(r.body) for r in hook.requests]
    [incident] = [p for p in posts if "incident" in p["title"]]
    assert incident["title"] == "smoke: incident: attempt 1 killed"
    assert incident["level"] == "alert" and incident["step"] == killed_at
    assert "SIGKILL from outside the program" in incident["text"]
    assert posts[-1]["title"].startswith("smoke: VERDICT ")  # the read as it stood
    hook.close()

    provenance = read_prereg(folder).provenance
    launched_code = provenance["code"]
    assert provenance["device"]["requested"] == "cpu" and provenance["versions"]["torch"]
    meta_data = load_log(folder.log).metas[0].data["fingerprint"]
    assert meta_data  # the engine names the corpus it trains on
    # at launch the corpus may not be built yet (the engine builds it at its first start)
    assert provenance["data"]["fingerprint"] in (None, meta_data)
    assert launched_code["sha256"] == load_log(folder.log).metas[0].code["sha256"]
    with open(code / "fontaine_engine" / "train.py", "a") as fh:
        fh.write("\n# an edit between the launch and the resume\n")
    resumed = launch(tmp_path, "--resume", code=code, preset=str(short))
    out, err = resumed.communicate(timeout=TIMEOUT)
    assert "resumed smoke" in out and "Traceback" not in err
    assert "resumed from checkpoint step-000010 (step 10)" in out
    assert "engine finished at step 20" in out
    store = load_log(folder.log)
    assert [e.event for e in store.events] == ["start", "resume", "end"]
    assert store.last_step == 20 and list(store.steps) == list(range(1, 21))
    assert store.replaced_steps == killed_at - 10  # the killed timeline past 10 was replayed
    [entry] = Registry(registry_path).entries()
    assert (entry.status, entry.exit_code, entry.last_step) == ("finished", 0, 20)
    assert [(a.number, a.kind, a.cause) for a in read_attempts(folder)] == [
        (1, "launch", "killed"),
        (2, "resume", "finished"),
    ]
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "runs"], capture_output=True, text=True
    )
    assert res.returncode == 0
    row = res.stdout.splitlines()[1].split()
    assert row[:4] == ["smoke", socket.gethostname(), "finished", "20/20"]
    assert row[9] == "2"  # ATT: the launch and the resume
    verdict = json.loads(folder.verdict.read_text())
    assert verdict["read_step"] == 20 and resumed.returncode == EXIT_CODES[verdict["verdict"]]
    new_code = store.metas[-1].code
    assert new_code["sha256"] != launched_code["sha256"]
    [change] = verdict["provenance"]["changed"]
    assert change.startswith("the code changed under the run: launched with ")
    assert str(launched_code["sha256"])[:12] in change and str(new_code["sha256"])[:12] in change
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "verdict", str(folder.root)],
        capture_output=True,
        text=True,
    )
    assert f"WARNING: {change}" in res.stdout


def test_ctrl_c_detaches_and_the_run_survives_the_console(
    tmp_path: Path, registry_path: Path
) -> None:
    from fontaine_tui.core.run.launcher import EngineProcess, pid_alive

    folder = RunFolder(tmp_path / "run")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # its own process group, as a terminal's foreground job: Ctrl-C = SIGINT to that group
    proc = subprocess.Popen(
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
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    engine = None
    try:
        deadline = time.monotonic() + TIMEOUT
        while read_tail(folder).last_step < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        [entry] = Registry(registry_path).entries()
        engine = EngineProcess.reattach(folder, entry.pid, entry.pid_started)
        assert proc.returncode == 130
        assert f"detached (SIGINT): engine pid {entry.pid} keeps running" in out
        assert f"fontaine-tui stop {folder.root}" in out
        assert pid_alive(entry.pid, entry.pid_started) and engine.poll() is None
        assert entry.status == "running"
        step = read_tail(folder).last_step
        deadline = time.monotonic() + 60
        while read_tail(folder).last_step <= step:  # still training without its console
            assert time.monotonic() < deadline
            time.sleep(0.05)
        info = engine.stop(grace_int=60, grace_term=30)  # from another console, by pid
        assert info.status == "stopped" and info.signal == "SIGINT"
        assert info.checkpoint_step == info.last_step  # the engine checkpointed on the way out
    finally:
        if engine is not None and engine.poll() is None:
            os.killpg(engine.pid, signal.SIGKILL)


@pytest.mark.xdist_group("smoke_run")  # one worker, one launch for both
def test_bank_a_real_run_and_launch_another_against_it(tmp_path: Path, smoke_run: SmokeRun) -> None:
    """Two real engine runs: the first (smoke_run) banked, the second launched with it as a
    comparator; the probes chart and verdict.json carry the banked curve and its sha256."""
    from fontaine_tui.core.bank import store as bank
    from fontaine_tui.core.charts.probes import SAME, probes_chart
    from fontaine_tui.core.run.evidence import seen_reads
    from fontaine_tui.core.verdict.rules import verdict_series
    from tests.core.launch.conftest import preset_variant

    first = smoke_run.folder.root  # a finished launch of smoke
    assert "engine finished at step 40" in smoke_run.out, smoke_run.err[-2000:]
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "bank", "add", str(first), "--as", "smoke_a"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    entry = bank.get("smoke_a")
    assert sorted(entry.probes()) == [10, 20, 30, 40]
    assert entry.doc["code"] and entry.doc["prereg"]["preset_name"] == "smoke"
    path = preset_variant(tmp_path, "smoke", name="against_a")
    path.write_text(
        path.read_text().replace(
            "[comparators.rigonly]",
            '[comparators.smoke_a]\nbank = "smoke_a"\n\n[comparators.rigonly]',
        )
    )
    second = subprocess.run(
        [
            sys.executable,
            "-m",
            "fontaine_tui",
            "launch",
            str(path),
            "--plain",
            "--output-dir",
            "b",
            "--poll",
            "0.5",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert "engine finished at step 40" in second.stdout, second.stderr[-2000:]
    folder = RunFolder(tmp_path / "b")
    frozen = read_prereg(folder).frozen_preset()
    assert frozen.comparators["smoke_a"].bank == entry.ref  # frozen by hash at launch
    doc = json.loads(folder.verdict.read_text())
    [banked] = [c for c in doc["comparators"] if c["name"] == "smoke_a"]
    assert banked["bank"] == entry.ref and banked["where"].startswith("banked run, ")
    a0 = entry.value(20, "eval_chunk_mae")
    assert banked["curve"] == [[s, entry.value(s, "eval_chunk_mae") - a0] for s in (20, 30, 40)]
    store = load_log(folder.log)
    seen = seen_reads(store, verdict_series(store, frozen), hidden=False)
    spec = probes_chart(seen, frozen, None, scaled=False)
    [curve] = [c for c in spec.curves if c.label.startswith("smoke_a (banked ")]
    # the same recipe and seed on this CPU: where its probes equal this run's point for point,
    # the legend says the banked curve lies under this run's
    [mine] = [c for c in spec.curves if c.label.startswith("this run")]
    same = dict(zip(mine.xs, mine.ys, strict=True))
    past = [(y, same[x]) for x, y in zip(curve.xs, curve.ys, strict=True) if x in same]
    past = past[1:]  # the anchor's delta is 0 for both
    equal = bool(past) and all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) for a, b in past)
    base = f"smoke_a (banked {entry.sha256[:8]})"
    assert curve.label == (base + SAME if equal else base), (curve, mine)
    assert list(curve.xs) == [20.0, 30.0, 40.0]
