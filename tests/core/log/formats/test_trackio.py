"""trackio's SQLite store as trackio itself writes it (trackio.init / log / finish in a
subprocess, TRACKIO_DIR a temp folder, no Space, no server): two runs in one project store
(a choice, never a merge), a value that is not a number counted, the store opened read-only,
`bank --run`, and a run followed live while a real trackio writer writes it."""

from __future__ import annotations

import asyncio
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.foreign import ForeignRun
from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.formats.locate import detect
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.log.formats.trackio import TrackioDecoder
from fontaine_tui.core.log.store import RunStore
from tests.core.log.formats.conftest import EVAL, foreign_preset, loss

pytest.importorskip("trackio")

# argv: TRACKIO_DIR-relative project, then "name:steps:sleep:flat" per run. Each run logs
# train/loss every step and eval/chunk_mae every 10 steps; a "flat" run's eval curve stays
# at 3.0 (HEALTHY), the other's is conftest's EVAL (falls to step 40, then rises). The flat
# run also logs a text value at step 1, which the reader must count, not drop.
WRITER = """
import sys, time
import trackio
project = sys.argv[1]
for spec in sys.argv[2:]:
    name, steps, pause, flat = spec.split(":")
    trackio.init(project=project, name=name)
    for step in range(1, int(steps) + 1):
        values = {"train/loss": 2.0 * 2.718281828459045 ** (-step / 30) + 0.1}
        if step % 10 == 0:
            values["eval/chunk_mae"] = (3.0 if flat == "1" else
                (3.0 - 0.01 * step if step <= 40 else 2.6 + 0.02 * (step - 40)))
        if step == 1 and flat == "1":
            values["phase"] = "warmup"
        trackio.log(values, step=step)
        time.sleep(float(pause))
    trackio.finish()
"""


def writer_env(folder: Path) -> dict[str, str]:
    """trackio local only: its store in `folder`, no Space, no server, nothing online."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("TRACKIO_", "HF_TOKEN", "GRADIO_"))
    }
    env.update(
        TRACKIO_DIR=str(folder),
        HF_HUB_OFFLINE="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        GRADIO_ANALYTICS_ENABLED="False",
        PYTHONUNBUFFERED="1",
    )
    return env


def write(folder: Path, *runs: str) -> None:
    subprocess.run(
        [sys.executable, "-c", WRITER, "proj", *runs],
        check=True,
        env=writer_env(folder),
        stdout=subprocess.DEVNULL,
        timeout=120,
    )


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> Path:
    """One project store, two runs: "drifting" (EVAL) and "flat" (with a text value)."""
    folder = tmp_path_factory.mktemp("trackio")
    write(folder, "drifting:80:0:0", "flat:80:0:1")
    return folder


def test_two_runs_are_a_choice_never_a_merge(two_runs, tmp_path, capsys):
    assert detect(two_runs) == "trackio"
    preset = foreign_preset(tmp_path, 'kind = "trackio"', drift=0.75)
    assert main(["verdict", str(two_runs), "--preset", str(preset)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "proj.db: source.run: 2 runs and none chosen: set [source] run" in err
    assert "'drifting'" in err and "'flat'" in err
    drifting = foreign_preset(tmp_path, 'kind = "trackio"\nrun = "drifting"', drift=0.75)
    assert main(["verdict", str(two_runs), "--preset", str(drifting)]) == 3  # SAME-DRIFT
    out = capsys.readouterr().out
    assert "trackio run 'drifting'" in out
    flat = foreign_preset(tmp_path, 'kind = "trackio"\nrun = "flat"', drift=0.75)
    assert main(["verdict", str(two_runs), "--preset", str(flat)]) == 0  # HEALTHY
    out = capsys.readouterr().out
    assert "VERDICT: HEALTHY" in out
    # the text value is counted and said, never dropped silently
    assert "1 unreadable entry in proj.db" in out and "phase at step 1: 'warmup'" in out
    nobody = foreign_preset(tmp_path, 'kind = "trackio"\nrun = "nobody"')
    assert main(["verdict", str(two_runs), "--preset", str(nobody)]) == 2
    assert "no run named 'nobody'" in capsys.readouterr().err


def test_a_run_reads_as_trackio_logged_it(two_runs):
    loaded = load_source(two_runs, SourceSpec("trackio", options={"run": "drifting"}))
    st = loaded.store
    assert list(st.steps) == list(range(1, 81))
    assert list(st.columns["loss"]) == pytest.approx([loss(s) for s in range(1, 81)])
    assert {s: p.fields["eval/chunk_mae"] for s, p in st.probes.items()} == pytest.approx(EVAL)
    assert all(t > 1e9 for t in st.columns["time"])  # trackio's ISO timestamps, in seconds
    assert st.malformed_count == 0


def test_source_path_names_the_store_file(two_runs, tmp_path, capsys):
    store = two_runs / "proj.db"
    preset = foreign_preset(
        tmp_path, f'kind = "trackio"\npath = "{store}"\nrun = "drifting"', drift=0.75
    )
    assert main(["verdict", str(tmp_path), "--preset", str(preset)]) == 3
    assert f"log {store} (trackio; trackio run 'drifting'" in capsys.readouterr().out


def test_a_store_no_run_has_logged_to_yet_is_said(tmp_path, monkeypatch):
    from trackio import sqlite_storage

    monkeypatch.setattr(sqlite_storage, "TRACKIO_DIR", tmp_path)
    sqlite_storage.SQLiteStorage.init_db("empty")  # trackio's tables, as init makes them
    assert detect(tmp_path) == "trackio"
    with pytest.raises(InputError, match="source.run: no run has logged to this store yet"):
        load_source(tmp_path, SourceSpec("trackio"))


def test_the_store_is_opened_read_only(two_runs):
    before = {p.name: p.read_bytes() for p in two_runs.iterdir()}
    load_source(two_runs, SourceSpec("trackio", options={"run": "flat"}))
    assert {p.name: p.read_bytes() for p in two_runs.iterdir()} == before


def test_bank_chooses_a_run_with_run(two_runs, capsys):
    assert main(["bank", "add", str(two_runs), "--as", "tk", "--ended"]) == 2
    err = capsys.readouterr().err
    assert "2 runs and none chosen" in err and "--run" in err
    assert main(["bank", "add", str(two_runs), "--as", "tk", "--ended", "--run", "drifting"]) == 0
    out = capsys.readouterr().out
    assert "as tk: sha256" in out and "(8 probes" in out
    assert main(["bank", "show", "tk"]) == 0
    assert "trackio run 'drifting'" in capsys.readouterr().out


def test_bank_run_is_refused_where_a_run_holds_one(tmp_path, capsys):
    (tmp_path / "log.jsonl").write_text('{"step": 1, "loss": 1.0}\n')
    assert main(["bank", "add", str(tmp_path), "--as", "x", "--ended", "--run", "a"]) == 2
    err = capsys.readouterr().err
    assert "--run: a jsonl run holds one run" in err and err.count("\n") == 1


async def test_a_live_run_shows_its_steps_while_trackio_writes(tmp_path):
    folder = tmp_path / "live"
    folder.mkdir()
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, "proj", "drifting:80:0.03:0"],
        env=writer_env(folder),
        stdout=subprocess.DEVNULL,
    )
    live = RunStore()
    seen_while_writing: list[int] = []
    run = ForeignRun(folder, SourceSpec("trackio"), poll_s=0.1)

    async def follow():
        async for batch in run.follow():
            for rec in batch.records:
                live.add(rec)
            if writer.poll() is None:
                seen_while_writing.append(len(live.steps))
            if len(live.steps) >= 80 and 80 in live.probes:
                return

    try:
        await asyncio.wait_for(follow(), 60)
    finally:
        await run.close()
        assert writer.wait(timeout=60) == 0
    # steps shown while the run was still being written, before its last
    assert any(0 < n < 80 for n in seen_while_writing), seen_while_writing
    cold = load_source(folder, SourceSpec("trackio")).store
    assert list(live.steps) == list(cold.steps) == list(range(1, 81))
    assert {s: p.fields for s, p in live.probes.items()} == {
        s: p.fields for s, p in cold.probes.items()
    }


def test_special_values_and_bad_rows_are_counted():
    dec = TrackioDecoder()
    records = (
        dec.feed_rows(
            [
                (1, 1, "2025-01-02T10:00:00+00:00", '{"loss": "Infinity", "eval/a": "NaN"}'),
                (2, 2, "2025-01-02T10:00:01+00:00", '{"loss": 1.5, "hist": {"_type": "h"}}'),
                (3, 2.5, "x", '{"loss": 1.0}'),
                (4, 3, "x", "not json"),
                (5, 4, None, '{"ok": true}'),
            ]
        )
        + dec.finish()
    )
    losses = [r.loss for r in records if hasattr(r, "loss")]
    assert losses[0] == float("inf") and losses[1] == 1.5
    assert dec.bad_count == 4
    reasons = " ".join(why for _, why in dec.bad)
    assert "hist at step 2" in reasons and "2.5 is not a whole number" in reasons
    assert "not JSON" in reasons and "ok at step 4: True" in reasons
    assert time.time() > records[0].time > 1.7e9


def test_steps_logged_at_one_time_give_no_zero_seconds_a_step(two_runs, tmp_path):
    """trackio stamps each batch it flushes with one time: a step's seconds come from the span
    since the last time that differs, over every step in it, or are not measured; never 0."""
    write(tmp_path, "paced:60:0.03:0")
    paced = load_source(tmp_path, SourceSpec("trackio", options={"run": "paced"})).store
    times = list(paced.columns["time"])
    assert len(set(times)) < len(times) - 10  # the real writer shares its times
    rates = [x for x in paced.columns["step_s"] if math.isfinite(x)]
    assert rates and all(0 < x < 0.3 for x in rates), rates
    assert 0.02 < statistics.median(rates) < 0.1, rates  # the writer sleeps 0.03 s a step
    once = load_source(two_runs, SourceSpec("trackio", options={"run": "drifting"})).store
    assert len(set(once.columns["time"])) < 10
    assert 0.0 not in list(once.columns["step_s"])
