"""kill -9 mid-run, then --resume: continues from the checkpoint step; the log stays readable."""

from __future__ import annotations

import json
import math
import shutil
import signal
import subprocess
import time

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.engine

from tests.engine.conftest import REPO, check_flags, engine_env, run_engine, tiny_argv  # noqa: E402
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
    argv = tiny_argv(tmp_path, corpus_dir, "--save-every", "4", steps=16)
    proc = subprocess.Popen(
        argv,
        cwd=REPO,
        env=engine_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(
            log,
            lambda rs: (
                any(r["kind"] == "checkpoint" and r["step"] >= 4 for r in rs)
                and max(r["step"] for r in rs) >= 6
            ),
            proc,
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = _records(log)
    killed_at = max(r["step"] for r in before)
    saved = max(r["step"] for r in before if r["kind"] == "checkpoint")
    assert killed_at < 16 and not any(r.get("event") == "end" for r in before)

    done = run_engine(argv + ["--resume"])
    assert done.returncode == 0, done.stderr
    records = _records(log)
    lines = log.read_text().splitlines()
    assert len(records) >= len(lines) - 1  # at most the one torn line from the kill
    after = records[len(before) :]
    check(after)
    resume = [r for r in after if r["kind"] == "event" and r["event"] == "resume"]
    assert len(resume) == 1 and resume[0]["step"] == saved
    assert f"step {saved}" in resume[0]["detail"]
    assert after[0]["kind"] == "meta" and after[0]["step"] == saved
    train_steps = [r["step"] for r in after if r["kind"] == "train"]
    assert train_steps == list(range(saved + 1, 17))
    assert after[-1]["kind"] == "event" and after[-1]["event"] == "end"
    assert (tmp_path / "checkpoints" / "step-000016" / "meta.json").is_file()
    try:
        from fontaine_tui.core.log.read import load_log
    except ImportError:
        return
    store = load_log(log)  # the console reads it: at most the torn line is malformed
    assert store.counts()["malformed"] <= 1 and len(store.resumes) == 1


def test_sigterm_checkpoints_and_exits_143(tmp_path, corpus_dir):
    log = tmp_path / "train_log.jsonl"
    proc = subprocess.Popen(
        tiny_argv(tmp_path, corpus_dir, steps=500),
        cwd=REPO,
        env=engine_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
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


# -- a resume continues the checkpoint's recipe; --extend-to trains past its steps ----------


def _tree(root):
    """Every file under root with its size and mtime: a refused resume changes none."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


def _six_step_argv(out, data):
    # warmup 2 of 6 steps: the cosine has 4 steps to fall, so a jump at its end would show
    argv = tiny_argv(out, data, "--warmup-steps", "2", steps=6)
    argv[argv.index("--num-workers") + 1] = "0"
    return argv


@pytest.fixture(scope="module")
def six_steps(tmp_path_factory, corpus_dir):
    out = tmp_path_factory.mktemp("six-steps")
    done = run_engine(_six_step_argv(out, corpus_dir))
    assert done.returncode == 0, done.stderr
    return out


def _lr(step, base=1e-3, warmup=2, total=6, floor=0.1):
    """The engine README's schedule, written out here: linear warmup, cosine to floor x base at the
    recipe's steps, then that floor (step is 0-based)."""
    if step < warmup:
        return base * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / (total - warmup))
    return base * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            ["--steps", "9"],
            "--resume: the recipe changed since checkpoint step-000006: steps 6 -> 9; "
            "resume with the checkpoint's recipe (to train past its steps: the same "
            "--steps and --extend-to N)",
        ),
        (
            ["--lr", "2e-3"],
            "--resume: the recipe changed since checkpoint step-000006: lr 0.001 -> "
            "0.002; resume with the checkpoint's recipe",
        ),
        (["--extend-to", "6"], "--extend-to 6: expected a step after the recipe's --steps 6"),
    ],
    ids=["steps", "lr", "extend-to-within-steps"],
)
def test_a_resume_that_changes_the_recipe_is_refused(six_steps, corpus_dir, extra, expected):
    argv = _six_step_argv(six_steps, corpus_dir)
    for flag, value in zip(extra[::2], extra[1::2], strict=True):
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    before = _tree(six_steps)
    proc = check_flags(argv + ["--resume"])
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"engine: error: {expected}"]
    assert _tree(six_steps) == before  # nothing written


def test_extend_to_needs_resume(tmp_path, corpus_dir):
    proc = check_flags(_six_step_argv(tmp_path, corpus_dir) + ["--extend-to", "9"])
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "engine: error: --extend-to 9: only with --resume (it extends a run that has "
        "checkpoints past its recipe's steps)"
    ]
    assert not any(tmp_path.iterdir())


def test_extend_to_trains_past_the_steps_at_the_floor_lr(six_steps, tmp_path, corpus_dir):
    run = tmp_path / "run"
    shutil.copytree(six_steps, run)
    log = run / "train_log.jsonl"
    first = _records(log)
    done = run_engine(_six_step_argv(run, corpus_dir) + ["--resume", "--extend-to", "9"])
    assert done.returncode == 0, done.stderr
    records = _records(log)
    after = records[len(first) :]
    check(after)
    assert after[0]["kind"] == "meta" and after[0]["extend_to"] == 9
    assert after[0]["recipe"]["steps"] == 6
    lrs = {r["step"]: r["lr"] for r in records if r["kind"] == "train"}
    assert sorted(lrs) == list(range(1, 10))
    # the first run's schedule is the recipe's, untouched by the later extension ...
    for step in range(1, 7):
        assert lrs[step] == pytest.approx(_lr(step - 1), rel=1e-12), step
    # ... it falls to the floor without a jump: each step at or below the one before ...
    assert all(lrs[s + 1] <= lrs[s] for s in range(2, 9))
    # ... and past the recipe's steps it holds the floor, 0.1 x lr
    assert [lrs[s] for s in (7, 8, 9)] == [pytest.approx(1e-4, rel=1e-12)] * 3
    assert lrs[6] > 1e-4  # the last step of the recipe is still on the cosine
    evals = [r["step"] for r in after if r["kind"] == "eval"]
    saved = [r["step"] for r in after if r["kind"] == "checkpoint"]
    assert evals == [9] and saved == [9]
    assert after[-1]["kind"] == "event" and after[-1]["detail"] == "finished at step 9"
    meta = json.loads((run / "checkpoints" / "step-000009" / "meta.json").read_text())
    assert (meta["step"], meta["extend_to"], meta["recipe"]["steps"]) == (9, 9, 6)

    # the extended run resumes only as extended: its checkpoint is past the recipe's steps
    proc = check_flags(_six_step_argv(run, corpus_dir) + ["--resume"])
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "engine: error: --resume: checkpoint step-000009 (step 9) is past the recipe's steps 6: "
        "the run was extended to 9; pass --extend-to 9"
    ]
    proc = check_flags(_six_step_argv(run, corpus_dir) + ["--resume", "--extend-to", "8"])
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "engine: error: --extend-to 8: checkpoint step-000009 is already past it (step 9)"
    ]
