"""Foreign runs followed live to their end, the real libraries writing while the tool
follows: an MLflow run (SQLite and file stores) and a Hugging Face Trainer's
trainer_state.json. Each probe, the endpoint's included, shows within one poll interval of
its write, never as a conflict; a finished MLflow run ends with an "end" event."""

from __future__ import annotations

import asyncio
import json

import pytest

from fontaine_tui.core.follow.foreign import MLFLOW_POLL_S, ForeignRun
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.log.store import RunStore
from tests.core.follow.foreign_writers import close, follow, probe_steps, writer

pytest.importorskip("mlflow")
pytest.importorskip("sqlalchemy")
pytest.importorskip("transformers")

STEPS, SPACING = 7, 0.4
KINDS = ("mlflow_sqlite", "mlflow_file", "hf_trainer")
ONE_POLL = MLFLOW_POLL_S  # the slowest poll of these sources (trainer_state.json: 0.5 s)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    root = tmp_path_factory.mktemp("live")
    procs = {k: writer(k, STEPS, SPACING) for k in KINDS}

    async def every():
        return await asyncio.gather(
            *(follow(k, root / k, procs[k], STEPS, timeout=90) for k in KINDS)
        )

    try:
        found = dict(zip(KINDS, asyncio.run(every()), strict=True))
    finally:
        codes = [close(p) for p in procs.values()]
    assert codes == [0] * len(KINDS)
    return found


@pytest.mark.parametrize("kind", KINDS)
def test_each_probe_shows_within_one_poll_of_its_write(live, kind):
    got = live[kind]
    assert sorted(got.written) == list(range(1, STEPS + 1))
    late = {s: round(got.latency(s), 3) for s in probe_steps(STEPS)}
    assert max(late.values()) <= ONE_POLL, late  # the endpoint's (step 7) included
    st = got.store
    assert list(st.steps) == list(range(1, STEPS + 1))
    assert sorted(st.probes) == probe_steps(STEPS)
    assert st.conflicts == [] and st.out_of_order_count == 0


@pytest.mark.parametrize("kind", ["mlflow_sqlite", "mlflow_file"])
def test_a_finished_mlflow_run_ends_with_its_end_event(live, kind):
    events = [(e.step, e.event, e.detail) for _, e in live[kind].events]
    assert events == [(STEPS, "end", "MLflow run status FINISHED")]
    assert live[kind].store.ended_at == STEPS


def _jsonl(path, rows):
    with open(path, "a") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))


def _csv(path, rows, seen):
    seen += rows  # the rows so far: the file is rewritten whole
    keys = ["step", "train/loss", "eval/a", "eval/b"]
    text = (
        ",".join(keys)
        + "\n"
        + "".join(",".join(str(r.get(k, "")) for k in keys) + "\n" for r in seen)
    )
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
async def test_a_step_completed_after_a_quiet_poll_is_one_probe(tmp_path, kind):
    """A writer logs one eval key of step 2, pauses past a poll (the tool sends the step out),
    then logs the other: the probe is completed, never a conflict or a value lost."""
    path = tmp_path / ("metrics.jsonl" if kind == "jsonl" else "metrics.csv")
    kept: list[dict] = []

    def write(p, rows):
        return _jsonl(p, rows) if kind == "jsonl" else _csv(p, rows, kept)

    run = ForeignRun(tmp_path, SourceSpec(kind), poll_s=0.1)
    store = RunStore()
    seen: list[dict] = []

    async def writer():
        write(
            path,
            [
                {"step": 1, "train/loss": 1.0},
                {"step": 2, "train/loss": 0.5},
                {"step": 2, "eval/a": 1.0},
            ],
        )
        await asyncio.sleep(1.5)  # past a quiet poll (and the former quiet second)
        seen.append({s: dict(p.fields) for s, p in store.probes.items()})
        write(path, [{"step": 2, "eval/b": 2.0}])
        await asyncio.sleep(1.5)
        write(path, [{"step": 3, "train/loss": 0.25, "eval/a": 0.5, "eval/b": 0.75}])

    async def reader():
        async for batch in run.follow():
            for rec in batch.records:
                store.add(rec)
            if 3 in store.probes:
                return

    task = asyncio.ensure_future(writer())
    try:
        await asyncio.wait_for(reader(), 15)
    finally:
        await run.close()
        await task
    assert seen == [{2: {"eval/a": 1.0}}]  # out on the quiet poll, before the rest came
    assert dict(store.probes[2].fields) == {"eval/a": 1.0, "eval/b": 2.0}
    assert store.conflicts == [] and store.out_of_order_count == 0
    assert list(store.steps) == [1, 2, 3]


async def test_the_console_session_shows_a_finished_mlflow_run_as_ended(live, tmp_path):
    from fontaine_tui.core.preset.find import load_preset
    from fontaine_tui.model.session import Session
    from tests.commands.test_attach_foreign_end import _preset

    preset = load_preset(_preset(tmp_path / "p.toml", "mlflow"))
    folder = live["mlflow_sqlite"].folder
    session = Session(ForeignRun(folder, SourceSpec("mlflow")), preset, "attach")
    statuses = []
    try:
        async with asyncio.timeout(20):
            async for batch in session.source.follow():
                session.apply(batch)
                statuses.append(session.view().status)
                if session.ended():
                    break
    finally:
        await session.source.close()
    assert statuses[-1] == "attached (ended)"
    assert session.latest().label == "HEALTHY" and not session.latest().provisional
