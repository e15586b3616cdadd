"""A W&B run followed while the real wandb library writes it: `attach --plain --until-end`
as a real subprocess shows the endpoint's probe while the run is still going, and ends on
the run's exit record; a failed exit ends it too; a replay ends on the recorded exit."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fontaine_tui.core.verdict.record import EXIT_CODES, PROVISIONAL_OFFSET
from tests.core.log.formats.conftest import EVAL, foreign_preset, loss
from tests.core.log.formats.wandbkit import exit_record, frame, history, start_writer

pytest.importorskip("wandb")


def _attach(folder: Path, preset: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fontaine_tui",
            "attach",
            str(folder),
            "--plain",
            "--until-end",
            "--preset",
            str(preset),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_attach_follows_a_wandb_run_as_wandb_writes_it(tmp_path):
    run, go = tmp_path / "run", tmp_path / "go"
    run.mkdir()
    preset = foreign_preset(tmp_path, 'kind = "wandb"')
    rows = [
        [s, {"train/loss": loss(s), **({"eval/chunk_mae": EVAL[s]} if s in EVAL else {})}]
        for s in range(1, 82)
    ]  # wandb holds a step's row until the next step comes
    attach = _attach(run, preset)  # before the run exists: it waits for it
    writer = start_writer(
        tmp_path,
        [
            {
                "project": "p",
                "dir": str(run),
                "id": "live1",
                "rows": rows,
                "pace": 0.01,
                "flush": 0.2,
                "wait_for": str(go),
            }
        ],
    )
    lines: list[str] = []
    seen = threading.Event()

    def read() -> None:
        assert attach.stdout is not None
        for line in attach.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("probe step 80"):
                seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # the endpoint's probe shows while the writer still holds the run open
        assert seen.wait(90), "\n".join(lines[-20:])
        assert writer.poll() is None
        live = len(lines)
        go.touch()  # now the run finishes: its exit record ends the attach
        # the verdict's exit code: 4, AMBIGUOUS
        assert attach.wait(60) == 4, attach.stderr.read() if attach.stderr else ""
        reader.join(10)
        assert writer.wait(60) == 0
    finally:
        for proc in (attach, writer):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert not any(ln.startswith("event") for ln in lines[:live])
    assert lines[-3] == "event end at step 81: W&B exit code 0", lines[-5:]
    assert lines[-2] == "ended: the run's end event at step 81: W&B exit code 0", lines[-5:]
    verdicts = [ln for ln in lines if ln.startswith("verdict: ")]
    assert verdicts[-1].startswith("verdict: AMBIGUOUS (final, step 80"), verdicts[-3:]
    assert [ln.split()[2] for ln in lines if ln.startswith("probe step")] == [
        f"{s}:" for s in sorted(EVAL)
    ]


def _failed_run(tmp_path: Path) -> Path:
    run = tmp_path / "run" / "wandb" / "offline-run-20260101_000000-f1" / "run-f1.wandb"
    run.parent.mkdir(parents=True)
    run.write_bytes(
        frame(
            [
                history(s, {"train/loss": 1.0, **({"eval/chunk_mae": 2.0} if s % 10 == 0 else {})})
                for s in range(1, 31)
            ]
            + [exit_record(1)]
        )
    )
    return tmp_path / "run"


def test_attach_until_end_stops_on_a_failed_exit(tmp_path):
    folder = _failed_run(tmp_path)
    attach = _attach(folder, foreign_preset(tmp_path, 'kind = "wandb"'))
    try:
        out, err = attach.communicate(timeout=60)
    finally:
        if attach.poll() is None:
            attach.kill()
    assert attach.returncode == 16, err  # the verdict's code: PROVISIONAL UNDECIDABLE
    assert out.splitlines()[-3] == "event error at step 30: W&B exit code 1"


def test_replay_of_a_wandb_run_ends_on_its_exit(tmp_path):
    folder = _failed_run(tmp_path)
    t0 = time.monotonic()
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "fontaine_tui",
            "replay",
            str(folder),
            "--plain",
            "--preset",
            str(foreign_preset(tmp_path, 'kind = "wandb"')),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # the verdict's code, as `verdict` exits: the run failed before its endpoint
    assert res.returncode == EXIT_CODES["UNDECIDABLE"] + PROVISIONAL_OFFSET, res.stderr
    out = res.stdout.splitlines()
    assert "event error at step 30: W&B exit code 1" in out
    assert out.index("event error at step 30: W&B exit code 1") > out.index(
        next(ln for ln in out if ln.startswith("probe step 30"))
    )
    assert time.monotonic() - t0 < 60


async def test_follow_a_wandb_run_over_ssh_by_byte_offset(sshd, tmp_path):
    """Over a real sshd on 127.0.0.1, the run file named by [source] path: its bytes by
    offset as they are appended (records torn across reads), decoded here, to its exit."""
    import asyncio

    from fontaine_tui.core.follow.foreign import ForeignRun
    from fontaine_tui.core.follow.ssh import SshRun
    from fontaine_tui.core.log.formats.cold import load_source
    from fontaine_tui.core.log.formats.source import SourceSpec
    from fontaine_tui.core.ssh.destination import SshTarget
    from tests.core.follow.test_foreign import collect
    from tests.core.follow.test_ssh import HOST_ALIAS

    folder = _failed_run(tmp_path)
    path = next(folder.glob("wandb/*/run-*.wandb"))
    data = path.read_bytes()
    path.write_bytes(data[:7])

    async def append() -> None:
        for k in range(7, len(data), 97):
            with open(path, "ab") as f:
                f.write(data[k : k + 97])
            await asyncio.sleep(0.02)

    spec = SourceSpec("wandb", str(path.relative_to(folder)))
    run = ForeignRun(
        str(folder),
        spec,
        transport=SshRun(SshTarget(HOST_ALIAS, str(folder)), ssh_options=sshd.ssh_options),
    )
    writing = asyncio.create_task(append())
    live = await collect(run, lambda st: bool(st.events))
    await writing
    cold = load_source(folder, spec).store
    assert [(e.step, e.event) for e in live.events] == [(30, "error")]
    assert list(live.steps) == list(cold.steps) == list(range(1, 31))
    assert sorted(live.probes) == [10, 20, 30]


async def test_follow_a_wandb_run_through_its_resumed_attempt(tmp_path):
    """wandb writes attempt 1 (steps 5..90, exit 1) while the run is followed, then the
    attempt resumed from step 85 (`resume="allow"`, a folder of its own) to step 200: the
    follow goes on into it, and its records are the cold read's, the verdict `verdict
    --json` gives the folder; never a final read of the first attempt alone."""
    import asyncio
    import json

    from fontaine_tui.core.follow.foreign import ForeignRun
    from fontaine_tui.core.log.formats.cold import load_source
    from fontaine_tui.core.log.formats.source import SourceSpec
    from fontaine_tui.core.log.store import RunStore
    from fontaine_tui.core.preset.find import load_preset
    from fontaine_tui.core.run.evidence import verdict_of
    from tests.core.log.formats.test_wandb_resume import attempts, cli, preset, rows

    run = tmp_path / "run"
    run.mkdir()
    first, second = attempts(run, "live2", [(rows(5, 90), 1), (rows(85, 200), 0)])
    follower = ForeignRun(run, SourceSpec("wandb"), poll_s=0.1)
    batches = follower.follow()
    live = RunStore()

    async def until(done) -> None:
        while not done(live):
            batch = await asyncio.wait_for(anext(batches), 60)
            assert not follower.refused, follower.refused
            for rec in batch.records:
                live.add(rec)

    writers = [start_writer(tmp_path, [first])]
    try:
        await until(lambda st: any(e.event == "error" for e in st.events))
        assert writers[0].wait(60) == 0
        assert [(e.step, e.event) for e in live.events] == [(90, "error")]
        writers.append(start_writer(tmp_path, [second]))
        await until(lambda st: any(e.event == "end" for e in st.events))
        assert writers[1].wait(60) == 0
    finally:
        await follower.close()
        for proc in writers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert len(list((run / "wandb").glob("offline-run-*-live2"))) == 2
    cold = load_source(run, SourceSpec("wandb")).store
    assert list(live.steps) == list(cold.steps) == list(range(5, 201, 5))
    assert list(live.columns["loss"]) == list(cold.columns["loss"])
    assert {s: p.fields for s, p in live.probes.items()} == {
        s: p.fields for s, p in cold.probes.items()
    }
    assert [(e.step, e.event) for e in live.events] == [(e.step, e.event) for e in cold.events]
    assert [(e.step, e.event) for e in live.resumes] == [(84, "resume")]
    assert [p.step for p in live.superseded] == [p.step for p in cold.superseded] == [90]
    assert live.conflicts == cold.conflicts == [] and live.ended_at == cold.ended_at == 200
    path = preset(tmp_path)
    code, out, err = cli("verdict", str(run), "--preset", str(path), "--json")
    doc = json.loads(out)
    mine = verdict_of(live, load_preset(path))
    assert (doc["verdict"], doc["provisional"], code) == ("AMBIGUOUS", False, 4), err
    assert (mine.verdict, mine.provisional, mine.read_step) == ("AMBIGUOUS", False, 200)
    assert doc["read_step"] == 200 and doc["read_value"] == mine.read_value


async def test_an_attempt_written_on_after_the_next_began_ends_the_follow(tmp_path):
    """An attempt's file still written when the next attempt's folder is there: the follow
    reads it to its end as the cold read does, goes on once it is quiet, and when the earlier
    file grows after that (bytes the cold read puts before the later attempt's) it says so
    and follows no further, never a read that is not the run's."""
    import asyncio

    from fontaine_tui.core.follow.foreign import ForeignRun
    from fontaine_tui.core.log.formats.cold import load_source
    from fontaine_tui.core.log.formats.source import SourceSpec
    from fontaine_tui.core.log.store import RunStore
    from tests.core.log.formats.wandbkit import run_record

    wandb = tmp_path / "run" / "wandb"
    one = wandb / "offline-run-20260101_000000-w2" / "run-w2.wandb"
    two = wandb / "offline-run-20260101_000100-w2" / "run-w2.wandb"
    one.parent.mkdir(parents=True)
    first = [run_record("w2")] + [history(s, {"train/loss": 1.0 / s}) for s in range(1, 31)]
    whole = frame(first)
    one.write_bytes(frame(first[:21]))  # steps 1..20 so far, the writer still at it
    follower = ForeignRun(tmp_path / "run", SourceSpec("wandb"), poll_s=0.1)
    batches = follower.follow()
    live, notes = RunStore(), []

    async def until(done) -> None:
        while not done(live):
            batch = await asyncio.wait_for(anext(batches), 30)
            notes.append(batch.note)
            for rec in batch.records:
                live.add(rec)

    try:
        await until(lambda st: 20 in st.steps)
        two.parent.mkdir()
        two.write_bytes(
            frame(
                [run_record("w2")]
                + [history(s, {"train/loss": 2.0 / s}) for s in range(15, 41)]
                + [exit_record(0)]
            )
        )
        await until(lambda st: any(e.event == "end" for e in st.events))
        cold = load_source(tmp_path / "run", SourceSpec("wandb")).store
        assert list(live.steps) == list(cold.steps) == list(range(1, 41))
        assert list(live.columns["loss"]) == list(cold.columns["loss"])
        assert [(e.step, e.event) for e in live.resumes] == [(14, "resume")]
        assert not follower.refused
        one.write_bytes(whole)  # the first attempt's writer writes on
        await until(lambda st: bool(follower.refused))
    finally:
        await follower.close()
    assert "written on after offline-run-20260101_000100-w2 began" in follower.refused
    assert follower.refused in notes
