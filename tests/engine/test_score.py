"""`python -m fontaine_engine score`: the run's own surface reproduces its eval records; another
surface gives other numbers and says which; bad input is one line and exit 2."""

from __future__ import annotations

import json
import shutil
import sys

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.engine, pytest.mark.xdist_group("engine_tiny_run")]

from tests.engine.conftest import check_flags, run_engine  # noqa: E402
from tests.engine.enginelog_schema import check, read  # noqa: E402

FIELDS = ("eval_chunk_mae", "train_chunk_mae", "eval_ar_ce", "eval_flow_loss")


@pytest.fixture(scope="module")
def scored_run(tiny_run):
    """The test run's 20-step tiny run (tests/conftest.py), read only."""
    return tiny_run


def score(*args: str):
    return run_engine([sys.executable, "-m", "fontaine_engine", "score", *map(str, args)])


def evals(path):
    return {r["step"]: r for r in read(path / "train_log.jsonl") if r["kind"] == "eval"}


def test_score_on_the_runs_surface_reproduces_its_eval_records(scored_run, tmp_path):
    out = tmp_path / "score"
    proc = score("--checkpoints", scored_run, "--output-dir", out)
    assert proc.returncode == 0, proc.stderr
    records = read(out / "train_log.jsonl")
    check(records)
    assert [r["kind"] for r in records] == ["meta", "event", "eval", "eval", "event"]
    assert (records[1]["event"], records[-1]["event"]) == ("start", "end")
    meta = records[0]
    assert meta["run"] == "t:score-as-run"
    assert meta["score"]["source_run"] == "t" and meta["score"]["steps"] == [10, 20]
    assert meta["score"]["checkpoints"] == [
        str(scored_run / "checkpoints" / f"step-0000{s}") for s in (10, 20)
    ]
    surface = meta["score"]["surface"]
    assert surface["name"] == "as-run" and surface["differs"] == []
    assert (surface["stats"], surface["frames"], surface["sampling_steps"]) == (
        "checkpoint",
        "draw",
        10,
    )
    own, again = evals(scored_run), evals(out)
    assert sorted(again) == sorted(own) == [10, 20]
    for step in own:
        for key in FIELDS:
            assert again[step][key] == pytest.approx(own[step][key], rel=1e-9, abs=0), (step, key)
        assert again[step]["breakdown"] == pytest.approx(own[step]["breakdown"], rel=1e-9)
        assert again[step]["n_frames"] == own[step]["n_frames"] == 256

    from fontaine_tui.core.log.read import load_log

    store = load_log(out / "train_log.jsonl")
    assert store.counts()["malformed"] == 0
    assert {s: p.eval_chunk_mae for s, p in store.probes.items()} == {
        s: r["eval_chunk_mae"] for s, r in again.items()
    }


def test_another_surface_gives_other_numbers_and_records_it(scored_run, tmp_path):
    """--stats corpus (the run recomputed its stats) moves every probe number; --sampling-steps
    2 moves only the sampled MAE (the AR CE and flow loss never sample). The second score
    replaces the first in the same folder: it is ours."""
    own, out = evals(scored_run), tmp_path / "score"
    proc = score(
        "--checkpoints", scored_run / "checkpoints", "--stats", "corpus", "--output-dir", out
    )
    assert proc.returncode == 0, proc.stderr
    meta = read(out / "train_log.jsonl")[0]
    assert meta["score"]["surface"]["name"] == "stats-corpus"
    assert meta["score"]["surface"]["differs"] == ["stats"]
    corpus_stats = evals(out)
    for step in own:
        for key in ("eval_chunk_mae", "train_chunk_mae", "eval_ar_ce"):
            assert abs(corpus_stats[step][key] - own[step][key]) > 1e-6, (step, key)

    proc = score(
        "--checkpoints",
        scored_run,
        "--sampling-steps",
        "2",
        "--surface",
        "euler-2",
        "--output-dir",
        out,
    )
    assert proc.returncode == 0, proc.stderr
    records = read(out / "train_log.jsonl")
    check(records)
    assert [r["kind"] for r in records].count("meta") == 1  # replaced, not appended to
    surface = records[0]["score"]["surface"]
    assert (surface["name"], surface["sampling_steps"], surface["differs"]) == (
        "euler-2",
        2,
        ["sampling_steps"],
    )
    two = evals(out)
    for step in own:
        assert abs(two[step]["eval_chunk_mae"] - own[step]["eval_chunk_mae"]) > 1e-6
        assert two[step]["eval_ar_ce"] == pytest.approx(own[step]["eval_ar_ce"], rel=1e-9)
        assert two[step]["surface"] == "euler-2"


def _one_line_errors(cases, capsys):
    from fontaine_engine.cli import main

    for flag, argv in cases:
        assert main(["score", *map(str, argv)]) == 2, flag
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and captured.out == "", (flag, captured)
        assert lines[0].startswith("engine: error: ") and flag in lines[0], lines[0]
        assert "Traceback" not in captured.err


def test_bad_input_is_one_line_and_exit_2(scored_run, tmp_path, capsys):
    ck = scored_run / "checkpoints"
    no_ckpt = tmp_path / "no-checkpoints"  # a run that logged but saved nothing
    no_ckpt.mkdir()
    shutil.copy(scored_run / "train_log.jsonl", no_ckpt / "train_log.jsonl")
    partial = tmp_path / "partial" / "checkpoints" / "step-000010"
    partial.mkdir(parents=True)
    shutil.copy(ck / "step-000010" / "model.safetensors", partial)  # no meta.json: incomplete
    other = tmp_path / "other-shape" / "checkpoints" / "step-000010"
    shutil.copytree(ck / "step-000010", other)
    meta = json.loads((other / "meta.json").read_text())
    meta["shape"]["motors"] = 7
    (other / "meta.json").write_text(json.dumps(meta))
    new = tmp_path / "new-out"
    cases = [
        ("--checkpoints", ["--checkpoints", no_ckpt, "--output-dir", new]),
        ("--checkpoints", ["--checkpoints", tmp_path / "absent", "--output-dir", new]),
        ("--checkpoints", ["--checkpoints", partial, "--output-dir", new]),
        ("--checkpoints", ["--checkpoints", partial.parent, "--output-dir", new]),
        ("--checkpoints", ["--checkpoints", corpus_folder(tmp_path), "--output-dir", new]),
        ("--data-dir", ["--checkpoints", other, "--output-dir", new]),  # incompatible shape
        ("--output-dir", ["--checkpoints", scored_run, "--output-dir", scored_run]),
        ("--surface", ["--checkpoints", scored_run, "--surface", "a b", "--output-dir", new]),
        (
            "--sampling-steps",
            ["--checkpoints", scored_run, "--sampling-steps", "0", "--output-dir", new],
        ),
        ("--stats", ["--checkpoints", scored_run, "--stats", "mean", "--output-dir", new]),
        ("--datasets", ["--checkpoints", scored_run, "--datasets", "nope", "--output-dir", new]),
    ]
    _one_line_errors(cases, capsys)
    assert not new.exists()
    assert "incompatible shape" in _last_error(other, new, capsys)
    assert "no complete checkpoint" in _last_error(no_ckpt, new, capsys)


def corpus_folder(tmp_path):
    """A folder that is neither a run nor a checkpoint."""
    folder = tmp_path / "not-a-run"
    folder.mkdir()
    (folder / "notes.txt").write_text("x")
    return folder


def _last_error(checkpoints, out, capsys) -> str:
    from fontaine_engine.cli import main

    assert main(["score", "--checkpoints", str(checkpoints), "--output-dir", str(out)]) == 2
    return capsys.readouterr().err


def test_a_foreign_output_folder_is_refused_and_left_byte_for_byte(scored_run, tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    (out / "train_log.jsonl").write_bytes(b'{"kind":"meta","step":0,"run":"someone else"}\n')
    (out / "notes.md").write_bytes(b"mine\n")
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.iterdir()}
    # refused by score's checks before anything is written: in this process (check_flags)
    proc = check_flags(
        [sys.executable, "-m", "fontaine_engine", "score", "--checkpoints", str(scored_run)]
        + ["--output-dir", str(out)]
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"engine: error: --output-dir {out}: not empty and not a score output of this engine "
        "(holds notes.md, train_log.jsonl); nothing was touched, choose another folder"
    ]
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.iterdir()} == before
    (out / "notes.md").unlink()  # a train_log.jsonl alone that is not a score output: refused
    from fontaine_engine.cli import main

    assert main(["score", "--checkpoints", str(scored_run), "--output-dir", str(out)]) == 2
    assert (out / "train_log.jsonl").read_bytes() == before["train_log.jsonl"][0]


def test_one_step_folder_is_scored_alone(scored_run, tmp_path):
    from fontaine_engine.cli import main

    step = scored_run / "checkpoints" / "step-000020"
    assert main(["score", "--checkpoints", str(step), "--output-dir", str(tmp_path / "o")]) == 0
    records = read(tmp_path / "o" / "train_log.jsonl")
    check(records)
    assert records[0]["score"]["checkpoints"] == [str(step)]
    assert records[0]["run"] == "t:score-as-run"  # the run's name, from its log
    (again,) = [r for r in records if r["kind"] == "eval"]
    assert again["step"] == 20 and again["checkpoint"] == str(step)
    for key in FIELDS:
        assert again[key] == pytest.approx(evals(scored_run)[20][key], rel=1e-9, abs=0), key


def test_datasets_all_is_every_dataset_not_the_runs(tmp_path):
    """`--datasets all` on a run trained on demos alone: the surface pools every sub-dataset
    (None) and says it differs; left out, it is the run's demos."""
    import argparse

    from fontaine_engine.surface import surface_of

    def surface(datasets):
        args = argparse.Namespace(
            stats=None,
            data_dir=None,
            frames=None,
            sampling_steps=None,
            datasets=datasets,
            precision=None,
            surface=None,
            breakdown=None,
            device="cpu",
        )
        return surface_of(args, {"datasets": "demos"}, {"data_dir": str(tmp_path)})

    every = surface("all")
    assert every.datasets is None and every.differs == ("datasets",)
    assert every.name == "datasets-all" and every.to_json()["datasets"] == "all"
    assert surface(None).datasets == ("demos",) and surface(None).name == "as-run"
    assert surface("demos,rig").datasets == ("demos", "rig")
