"""`fontaine-tui amend` held to what `verdict` holds a run folder to.

The frozen prereg.json is the preset an amendment is declared under, whatever `-p` says: a
preset that differs from it is refused in one line (exit 2, nothing written), and the last
step seen is measured through the frozen preset's own [source], never another preset's. A
ledger copied from another run does not follow this run's prereg.json: `verdict` and `amend`
both refuse it. An amendment declared after the log's own clock passed the step it first
affects is refused, whatever step it says it saw (a ledger carried over from a stale copy of
the run)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from fontaine_tui import cli
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from tests.core.launch.conftest import preset_variant, without_amendments
from tests.logs import RIGONLY_LIKE, records

FOREIGN = """[run]
name = "foreign"

[source]
kind = "jsonl"
eval_every = 10

[verdict]
metric = "eval/chunk_mae"
anchor_step = 30
endpoint_step = 60
healthy_max = 0.3
drift_min = 1.0
"""


def engine_run(tmp_path: Path, upto: int, name: str = "run", t0: float | None = None) -> RunFolder:
    """A run folder frozen from demosonly_1gpu (no preset amendments), its log cut at `upto`.

    `t0` moves the log's own clock (its records' `time`) to start there."""
    folder = RunFolder(tmp_path / name)
    folder.root.mkdir()
    freeze(folder, load_preset(without_amendments(tmp_path)), ["engine"], "h")
    write_engine_log(folder, upto, t0)
    return folder


def write_engine_log(folder: RunFolder, upto: int, t0: float | None = None) -> None:
    recs = [
        r
        for r in records(RIGONLY_LIKE)
        if r["step"] <= upto and not (r["kind"] == "event" and r["event"] == "end")
    ]
    if t0 is not None:
        first = recs[0]["time"]
        recs = [{**r, "time": t0 + (r["time"] - first)} for r in recs]
    folder.log.write_text("".join(json.dumps(r) + "\n" for r in recs))


def jsonl_log(root: Path, upto: int) -> None:
    """Another trainer's JSONL log: a train line every step, an eval line every 10."""
    with open(root / "log.jsonl", "w") as f:
        for step in range(1, upto + 1):
            f.write(json.dumps({"step": step, "train/loss": 1.0 / step}) + "\n")
            if step % 10 == 0:
                f.write(json.dumps({"step": step, "eval/chunk_mae": 3.0 - step / 100}) + "\n")


def test_amend_refuses_a_preset_that_differs_from_the_frozen_one(tmp_path, capsys):
    folder = engine_run(tmp_path, 300)
    moved = preset_variant(tmp_path, "demosonly_1gpu", "moved", healthy_max="0.9")
    code = cli.main(["amend", str(folder.root), "--scale-factor", "1.25", "-p", str(moved)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"--preset {moved}: differs from the run's frozen pre-registration" in err
    assert "verdict.healthy_max: frozen 0.3, given 0.9" in err and "Traceback" not in err
    assert not folder.amendments.exists()  # nothing written


def test_amend_never_measures_the_last_step_through_another_presets_source(tmp_path, capsys):
    # the run's own log passed the anchor (510); another preset's [source] reads a log.jsonl
    # in the same folder that stops at step 20: measured through it, a late scale would count
    folder = engine_run(tmp_path, 510)
    jsonl_log(folder.root, 20)
    other = tmp_path / "foreign.toml"
    other.write_text(FOREIGN.replace('kind = "jsonl"', 'kind = "jsonl"\npath = "log.jsonl"'))
    code = cli.main(["amend", str(folder.root), "--scale-factor", "1.25", "-p", str(other)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "differs from the run's frozen pre-registration" in err
    assert not folder.amendments.exists()
    # without -p (or with the frozen preset itself) the step is the run's own log's
    same = without_amendments(tmp_path)
    assert cli.main(["amend", str(folder.root), "--scale-factor", "1.25", "-p", str(same)]) == 1
    out = capsys.readouterr().out
    assert "last step seen 510" in out and "refused: declared after step 510 was seen" in out


def test_amend_reads_a_foreign_run_through_its_frozen_source(tmp_path, capsys):
    root = tmp_path / "run"
    root.mkdir()
    preset = tmp_path / "foreign.toml"
    preset.write_text(FOREIGN)
    freeze(RunFolder(root), load_preset(preset), ["trainer"], "h")
    jsonl_log(root, 20)
    engine = preset_variant(tmp_path, "demosonly_1gpu", "engine")
    assert cli.main(["amend", str(root), "--extend-to", "90", "-p", str(engine)]) == 2
    assert "differs from the run's frozen pre-registration" in capsys.readouterr().err
    assert cli.main(["amend", str(root), "--extend-to", "90", "-p", str(preset)]) == 0
    assert "last step seen 20" in capsys.readouterr().out


def test_a_ledger_copied_from_another_run_is_refused_by_verdict_and_amend(tmp_path, capsys):
    a = engine_run(tmp_path, 300, "a")
    b = engine_run(tmp_path, 300, "b")  # another launch: its own prereg.json
    assert cli.main(["amend", str(a.root), "--scale-factor", "1.25"]) == 0
    for name in ("amendments.jsonl", "amendments.jsonl.head"):
        shutil.copy(a.root / name, b.root / name)
    capsys.readouterr()
    assert cli.main(["verdict", str(b.root)]) == 2
    err = capsys.readouterr().err.strip()
    assert "amendments.jsonl:1: does not follow prereg.json" in err
    assert len(err.splitlines()) == 1
    before = b.amendments.read_bytes()
    assert cli.main(["amend", str(b.root), "--scale-factor", "1.5"]) == 2
    err = capsys.readouterr().err.strip()
    assert "does not follow prereg.json" in err and "nothing was written" in err
    assert b.amendments.read_bytes() == before


@pytest.mark.parametrize("kind", ["scale", "extend"])
def test_an_amendment_from_a_stale_copy_of_the_run_is_late_by_the_logs_clock(
    tmp_path, capsys, kind
):
    # the run, copied while at step 300; the copy's log stands still, the run's goes on past
    # the step the amendment first affects (the anchor 500, the endpoint 1000) before the
    # amendment is declared in the copy and its ledger carried back into the run
    now = time.time()
    run = engine_run(tmp_path, 300, t0=now - 3600)
    copy = RunFolder(tmp_path / "copy")
    shutil.copytree(run.root, copy.root)
    write_engine_log(run, 1000 if kind == "extend" else 600, t0=now - 3600)
    rule = ["--extend-to", "1250"] if kind == "extend" else ["--scale-factor", "1.25"]
    assert cli.main(["amend", str(copy.root), *rule]) == 0  # the copy saw step 300 only
    assert "last step seen 300" in capsys.readouterr().out
    for name in ("amendments.jsonl", "amendments.jsonl.head"):
        shutil.copy(copy.root / name, run.root / name)
    assert cli.main(["verdict", str(run.root), "--json"]) != 2
    [check] = json.loads(capsys.readouterr().out)["amendments"]
    first = 1000 if kind == "extend" else 500
    assert check["status"] == "refused", check
    assert f"the log's own clock had passed step {first}" in check["reason"]
    if kind == "extend":  # amend says what the verdict will: the late extend moved nothing
        assert cli.main(["amend", str(run.root), "--extend-to", "1500"]) == 1
        out = capsys.readouterr().out
        assert "refused: declared after step 1000 was seen" in out, out
        assert "before step 1000 (the endpoint in force)" in out, out
        run.amendments.unlink()  # the late ledger's chain, with the new line, removed
        for name in ("amendments.jsonl", "amendments.jsonl.head"):
            shutil.copy(copy.root / name, run.root / name)
    # the same declaration, in time by the log's clock, counts
    write_engine_log(run, 300, t0=now - 3600)
    assert cli.main(["verdict", str(run.root), "--json"]) != 2
    assert json.loads(capsys.readouterr().out)["amendments"][0]["status"] == "applied"


@pytest.mark.parametrize("declared", ["2026-12-07T10:00:00+00:00", "soon", ""])
def test_an_amendment_whose_time_cannot_be_read_is_refused_by_the_logs_clock(
    tmp_path, capsys, monkeypatch, declared
):
    """A ledger line whose `declared_at` is not the UTC time amend writes: the log's clock
    cannot place it, so it does not count (it counted, unchecked)."""
    from fontaine_tui.core.verdict import ledger

    run = engine_run(tmp_path, 300, t0=time.time() - 3600)
    monkeypatch.setattr(ledger, "utc_iso", lambda _t: declared)  # a line another tool wrote
    assert cli.main(["amend", str(run.root), "--scale-factor", "1.25"]) == 1  # recorded, refused
    monkeypatch.undo()
    assert "not a UTC time as amend writes one" in capsys.readouterr().out
    assert cli.main(["verdict", str(run.root), "--json"]) != 2
    [check] = json.loads(capsys.readouterr().out)["amendments"]
    assert check["status"] == "refused", check
    assert "not a UTC time as amend writes one" in check["reason"], check


@pytest.mark.parametrize("declared", ["1970-01-01T00:00:00Z", "0001-01-01T00:00:00Z"])
def test_an_amendment_declared_before_the_log_reached_the_step_it_saw_is_refused(
    tmp_path, capsys, monkeypatch, declared
):
    """A declared time earlier than the log's own time for the step the line says it saw:
    one of the two is false, so the amendment does not count (it counted)."""
    from fontaine_tui.core.verdict import ledger

    run = engine_run(tmp_path, 300, t0=time.time() - 3600)
    monkeypatch.setattr(ledger, "utc_iso", lambda _t: declared)
    assert cli.main(["amend", str(run.root), "--scale-factor", "1.25"]) == 1  # recorded, refused
    monkeypatch.undo()
    assert "before the step it says it saw" in capsys.readouterr().out
    assert cli.main(["verdict", str(run.root), "--json"]) != 2
    [check] = json.loads(capsys.readouterr().out)["amendments"]
    assert check["status"] == "refused", check
    assert "the log's own clock logged its probe at step 250" in check["reason"], check
