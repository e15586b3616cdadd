"""kill -9 mid-run, then --resume: continues from the checkpoint step; the log stays readable."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.engine

from tests.engine.conftest import REPO, engine_env, run_engine, tiny_argv  # noqa: E402
from tests.engine.enginelog_schema import check  # noqa: E402


def _records(path):
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:  # a torn line from the kill is allowed (readers skip it)
            pass
    return out


def _wait_for(path, predicate, proc, timeout=90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and predicate(_records(path)):
            return
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    raise AssertionError("timed out waiting for the log")


def test_sigkill_then_resume(tmp_path, corpus_dir):
    log = tmp_path / "train_log.jsonl"
    argv = tiny_argv(tmp_path, corpus_dir, "--save-every", "4", steps=24)
    proc = subprocess.Popen(argv, cwd=REPO, env=engine_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(log, lambda rs: any(r["kind"] == "checkpoint" and r["step"] >= 4 for r in rs)
                  and max(r["step"] for r in rs) >= 6, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = _records(log)
    killed_at = max(r["step"] for r in before)
    saved = max(r["step"] for r in before if r["kind"] == "checkpoint")
    assert killed_at < 24 and not any(r.get("event") == "end" for r in before)

    done = run_engine(argv + ["--resume"])
    assert done.returncode == 0, done.stderr
    records = _records(log)
    lines = log.read_text().splitlines()
    assert len(records) >= len(lines) - 1  # at most the one torn line from the kill
    after = records[len(before):]
    check(after)
    resume = [r for r in after if r["kind"] == "event" and r["event"] == "resume"]
    assert len(resume) == 1 and resume[0]["step"] == saved
    assert f"step {saved}" in resume[0]["detail"]
    assert after[0]["kind"] == "meta" and after[0]["step"] == saved
    train_steps = [r["step"] for r in after if r["kind"] == "train"]
    assert train_steps == list(range(saved + 1, 25))
    assert after[-1]["kind"] == "event" and after[-1]["event"] == "end"
    assert (tmp_path / "checkpoints" / "step-000024" / "meta.json").is_file()
    try:
        from fontaine_tui.core.log.read import load_log
    except ImportError:
        return
    store = load_log(log)  # the console reads it: at most the torn line is malformed
    assert store.counts()["malformed"] <= 1 and len(store.resumes) == 1


def test_sigterm_checkpoints_and_exits_143(tmp_path, corpus_dir):
    log = tmp_path / "train_log.jsonl"
    proc = subprocess.Popen(tiny_argv(tmp_path, corpus_dir, steps=500), cwd=REPO,
                            env=engine_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        _wait_for(log, lambda rs: sum(r["kind"] == "train" for r in rs) >= 3, proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    records = _records(log)
    check(records)
    last = records[-1]
    assert last["kind"] == "event" and last["event"] == "end"
    assert last["detail"] == f"stopped by SIGTERM at step {last['step']}"
    assert records[-2] == {**records[-2], "kind": "checkpoint", "step": last["step"]}
    assert (tmp_path / "checkpoints" / f"step-{last['step']:06d}" / "meta.json").is_file()
