"""W&B runs (`wandb/offline-run-*/run-*.wandb`) read without wandb: runs written by the real
library in offline mode, the verdict, the bank, a choice among several runs, and what a
damaged file holds counted, never taken."""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.formats.locate import detect
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.log.formats.wandb import LogFramer, WandbDecoder
from fontaine_tui.core.log.records import Event
from tests.core.log.formats.conftest import EVAL, foreign_preset, loss
from tests.core.log.formats.wandbkit import (
    exit_record,
    frame,
    history,
    run_file,
    run_record,
    write_runs,
)

pytest.importorskip("wandb")


def rows(last: int = 80) -> list:
    return [
        [s, {"train/loss": loss(s), **({"eval/chunk_mae": EVAL[s]} if s in EVAL else {})}]
        for s in range(1, last + 1)
    ]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Written once for the module by wandb: a clean run to step 80 (exit 0, a config big
    enough to cut its run record across blocks), a run that fails at step 50 (exit 1), and a
    folder holding both."""
    tmp = tmp_path_factory.mktemp("wandb")
    clean, failed = tmp / "clean", tmp / "failed"
    write_runs(
        tmp,
        [
            {
                "project": "p",
                "dir": str(clean),
                "id": "clean1",
                "rows": rows(),
                "config": {"blob": "x" * 70000},
            },
            {"project": "p", "dir": str(failed), "id": "fail1", "rows": rows(50), "exit": 1},
        ],
    )
    both = tmp / "both"
    for src in (clean, failed):
        shutil.copytree(run_file(src).parent, both / "wandb" / run_file(src).parent.name)
    return {"clean": clean, "failed": failed, "both": both}


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_a_real_offline_run_reads_its_history_and_its_end(runs):
    folder = runs["clean"]
    assert detect(folder) == "wandb"
    loaded = load_source(folder, SourceSpec("wandb"))
    store = loaded.store
    assert store.probe_steps() == sorted(EVAL)
    assert {s: store.probes[s].fields["eval/chunk_mae"] for s in EVAL} == EVAL
    assert list(store.steps) == list(range(1, 81))
    assert store.columns["loss"][9] == loss(10)
    assert store.ended_at == 80
    assert [(e.event, e.detail) for e in store.events] == [("end", "W&B exit code 0")]
    assert "W&B run clean1 (project p)" in loaded.label
    assert store.notices == [] and store.malformed_count == 0


def test_a_run_that_exits_with_an_error_is_an_error_event_at_its_last_step(runs):
    store = load_source(runs["failed"], SourceSpec("wandb")).store
    assert [(e.step, e.event, e.detail) for e in store.events] == [(50, "error", "W&B exit code 1")]
    assert store.ended_at is None and store.probe_steps() == [10, 20, 30, 40, 50]


def test_the_framing_here_is_wandbs_byte_for_byte(runs):
    """The test writer's framing (used where wandb will not write a fault) frames the
    records of a real run file into the same bytes, a record cut across blocks included."""
    data = run_file(runs["clean"]).read_bytes()
    got: list[tuple[int, bytes]] = []
    framer = LogFramer(lambda where, why: pytest.fail(f"{where}: {why}"))
    for k in range(0, len(data), 4096):  # appended in pieces, as a follower reads it
        got += framer.feed(data[k : k + 4096])
    framer.finish()
    assert max(len(p) for _, p in got) > 70000  # the config: FIRST, MIDDLE, LAST
    assert frame([p for _, p in got]) == data


def test_the_verdict_of_a_wandb_run(runs, tmp_path):
    preset = foreign_preset(tmp_path, 'kind = "wandb"')
    code, out, err = cli("verdict", str(runs["clean"]), "--preset", str(preset), "--json")
    doc = json.loads(out)
    # anchor 40 (2.6), endpoint 80 (3.4): a rise of 0.8, between healthy 0.3 and drift 1.0
    assert (doc["verdict"], doc["provisional"], code) == ("AMBIGUOUS", False, 4), err
    code, out, _ = cli("verdict", str(run_file(runs["clean"])), "--preset", str(preset))
    assert code == 4 and "run-clean1.wandb" in out


def test_several_runs_in_one_folder_are_never_merged(runs, tmp_path):
    preset = foreign_preset(tmp_path, 'kind = "wandb"')
    code, _, err = cli("verdict", str(runs["both"]), "--preset", str(preset))
    assert code == 2 and err.count("\n") == 1
    assert "2 W&B runs" in err and "clean1" in err and "fail1" in err and "source] run" in err
    chosen = foreign_preset(tmp_path, 'kind = "wandb"\nrun = "clean1"')
    code, out, _ = cli("verdict", str(runs["both"]), "--preset", str(chosen), "--json")
    assert code == 4 and json.loads(out)["read_step"] == 80
    by_folder = foreign_preset(
        tmp_path, f'kind = "wandb"\nrun = "{run_file(runs["failed"]).parent.name}"'
    )
    code, out, _ = cli("verdict", str(runs["both"]), "--preset", str(by_folder), "--json")
    assert json.loads(out)["provisional"] is True  # the failed run: probes to step 50


def test_bank_a_wandb_run_then_compare_against_it(runs, tmp_path, monkeypatch):
    monkeypatch.setenv("FONTAINE_BANK", str(tmp_path / "bank"))
    code, _, err = cli("bank", "add", str(runs["failed"]), "--as", "wb-failed")
    assert code == 2 and "--ended" in err  # its exit was an error: not ended as it should
    code, out, err = cli(
        "bank", "add", str(runs["clean"]), "--as", "wb-ref"
    )  # its exit says it ended
    assert code == 0, err
    assert "8 probes" in out
    code, out, _ = cli("bank", "show", "wb-ref", "--json")
    assert json.loads(out)["ended"] == "its log says so (W&B exit code 0)"
    preset = foreign_preset(tmp_path, 'kind = "wandb"')
    preset.write_text(preset.read_text() + '\n[comparators.ref]\nbank = "wb-ref"\n')
    code, out, err = cli("verdict", str(runs["clean"]), "--preset", str(preset), "--json")
    doc = json.loads(out)
    assert code == 4, err
    (ref,) = doc["comparators"]  # the banked run's own rise, read as this run's rule reads
    assert ref["bank"].startswith("wb-ref@") and ref["delta"] == pytest.approx(0.8)


def test_the_step_key_can_be_another_logged_key(tmp_path):
    run = tmp_path / "wandb" / "offline-run-20260101_000000-gs1" / "run-gs1.wandb"
    run.parent.mkdir(parents=True)
    run.write_bytes(
        frame(
            [run_record("gs1")]
            + [
                history(
                    k,
                    {
                        "train/global_step": 10 * k,
                        "train/loss": 1.0,
                        **({"eval/chunk_mae": 0.5} if k % 4 == 0 else {}),
                    },
                )
                for k in range(1, 9)
            ]
        )
    )
    store = load_source(tmp_path, SourceSpec("wandb")).store
    assert store.probe_steps() == [4, 8]
    spec = load_source(tmp_path, _spec(step="train/global_step")).store
    assert spec.probe_steps() == [40, 80] and list(spec.steps)[:2] == [10, 20]


def _spec(**table: str) -> SourceSpec:
    from fontaine_tui.core.log.formats.source import read_spec

    return read_spec({"kind": "wandb", **table})


def _damaged(tmp_path: Path, data: bytes) -> Path:
    run = tmp_path / "wandb" / "offline-run-20260101_000000-bad1" / "run-bad1.wandb"
    run.parent.mkdir(parents=True)
    run.write_bytes(data)
    return tmp_path


def test_a_record_that_fails_its_checksum_is_counted_not_taken(tmp_path):
    records = (
        [run_record("bad1")]
        + [history(s, {"eval/chunk_mae": 1.0 + s / 100}) for s in (10, 20, 30)]
        + [exit_record(0)]
    )
    data = bytearray(frame(records))
    at = data.index(b"1.2")  # step 20's value, 1.2 -> 1.9: the checksum no longer holds
    data[at + 2] = ord("9")
    store = load_source(_damaged(tmp_path, bytes(data)), SourceSpec("wandb")).store
    assert store.probe_steps() == [10, 30]  # not 1.9 at step 20
    assert store.malformed_count == 1
    assert any("fails its checksum" in n for n in store.notices), store.notices


def test_a_torn_last_record_is_said_and_waits_when_followed(tmp_path):
    records = [history(s, {"eval/chunk_mae": 1.0}) for s in (10, 20)]
    data = frame(records)
    cut = data[:-5]
    store = load_source(_damaged(tmp_path, cut), SourceSpec("wandb")).store
    assert store.probe_steps() == [10]
    assert any("not yet whole" in n for n in store.notices), store.notices
    dec = WandbDecoder()
    out = dec.feed(cut)  # followed: the torn record waits for its end, nothing is counted
    out += dec.feed(data[-5:]) + dec.finish()
    assert [r.step for r in out] == [10, 20] and dec.bad_count == 0


def test_values_that_are_not_numbers_and_a_step_logged_twice(tmp_path):
    records = [
        history(10, {"eval/chunk_mae": 1.0, "note": '"text"'}),
        history(20, {"eval/chunk_mae": 2.0}),
        history(20, {"eval/chunk_mae": 2.5}),  # the same step, another value
        history(30, {"eval/chunk_mae": "1.0.0"}),  # not JSON
        exit_record(3),
    ]
    store = load_source(_damaged(tmp_path, frame(records)), SourceSpec("wandb")).store
    assert [c.step for c in store.conflicts] == [20]
    assert store.malformed_count == 1  # the train key's text
    text = " ".join(store.notices)
    assert "note: value 'text' is not a number" in text and "'1.0.0'" not in text
    # the eval key's is kept as what it is, a probe's value (said through the gate)
    assert store.odd_values.first == (("eval/chunk_mae", 30, "'1.0.0'"),)
    assert [(e.event, e.step) for e in store.events if isinstance(e, Event)] == [("error", 30)]


def test_a_file_that_is_not_a_wandb_run_is_one_line_exit_2(tmp_path):
    folder = _damaged(tmp_path, b"not a run file at all")
    preset = foreign_preset(tmp_path, 'kind = "wandb"')
    code, _, err = cli("verdict", str(folder), "--preset", str(preset))
    assert code == 2 and err.count("\n") == 1 and "not a W&B run file" in err
