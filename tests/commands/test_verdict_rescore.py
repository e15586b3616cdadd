"""`fontaine-tui verdict` on an AMBIGUOUS-BY-INSTRUMENT engine run with saved checkpoints
prints the re-score that disambiguates it (`python -m fontaine_engine score`), paths
shell-quoted."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from fontaine_tui.cli import main
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from tests.logs import RIGONLY_LIKE, SCALED_LIKE, write_log

PYTHON = "/opt/engine venv/bin/python"  # the interpreter the run was launched with


def engine_run(
    folder: Path,
    probes=SCALED_LIKE,
    recompute: bool = True,
    checkpoints: tuple[int, ...] = (500, 1000),
) -> Path:
    """A run folder as the engine leaves it: the log and checkpoints/step-NNNNNN folders."""
    write_log(folder / "train_log.jsonl", probes=probes)
    for step in checkpoints:
        ck = folder / "checkpoints" / f"step-{step:06d}"
        ck.mkdir(parents=True)
        for name in ("model.safetensors", "optimizer.pt", "stats.json"):
            (ck / name).write_bytes(b"")
        (ck / "meta.json").write_text(
            json.dumps(
                {"step": step, "recipe": {"recompute_stats": recompute}, "model_size": "small"}
            )
        )
    return folder


def command_lines(out: str) -> list[list[str]]:
    return [
        shlex.split(line)
        for line in out.splitlines()
        if line.startswith("  ") and " -m fontaine_engine score " in line
    ]


def test_the_verdict_prints_the_rescore_command(tmp_path, capsys, demosonly):
    run = engine_run(tmp_path / "my run's folder")
    freeze(
        RunFolder(run),
        demosonly,
        [PYTHON, "-m", "fontaine_engine", "train", "--output-dir", str(run)],
        "host",
    )
    assert main(["verdict", str(run)]) == 5
    out = capsys.readouterr().out
    assert "VERDICT: AMBIGUOUS-BY-INSTRUMENT  [final]" in out
    assert command_lines(out) == [
        [
            PYTHON,
            "-m",
            "fontaine_engine",
            "score",
            "--checkpoints",
            str(run),
            "--stats",
            "corpus",
            "--output-dir",
            str(run / "score-stats-corpus"),
        ]
    ]
    line = next(ln for ln in out.splitlines() if " -m fontaine_engine score " in ln)
    assert shlex.quote(str(run)) in line and shlex.quote(PYTHON) in line  # quoted for a shell
    assert "disambiguator: re-score the saved checkpoints on the stats-corpus surface" in out

    # the log named directly reads the same folder; --json stays one JSON document
    assert main(["verdict", str(run / "train_log.jsonl")]) == 5
    assert len(command_lines(capsys.readouterr().out)) == 1
    assert main(["verdict", str(run), "--json"]) == 5
    assert json.loads(capsys.readouterr().out)["verdict"] == "AMBIGUOUS-BY-INSTRUMENT"


def test_a_run_that_kept_the_corpus_stats_is_offered_the_recomputed_ones(tmp_path, capsys):
    run = engine_run(tmp_path / "run", recompute=False)
    assert main(["verdict", str(run), "--preset", "demosonly_1gpu"]) == 5
    (argv,) = command_lines(capsys.readouterr().out)
    assert argv[0] == sys.executable  # no prereg.json: this interpreter
    assert argv[argv.index("--stats") + 1] == "recomputed"
    assert argv[-1] == str(run / "score-stats-recomputed")


def test_no_command_without_checkpoints_or_for_another_verdict(tmp_path, capsys):
    bare = engine_run(tmp_path / "no-checkpoints", checkpoints=())
    assert main(["verdict", str(bare), "--preset", "demosonly_1gpu"]) == 5
    out = capsys.readouterr().out
    assert "AMBIGUOUS-BY-INSTRUMENT" in out and " -m fontaine_engine score " not in out
    agreeing = engine_run(tmp_path / "agreeing", probes=RIGONLY_LIKE)
    assert main(["verdict", str(agreeing), "--preset", "demosonly_1gpu"]) == 4
    assert " -m fontaine_engine score " not in capsys.readouterr().out
    (bare / "checkpoints" / "step-000500").mkdir(parents=True)  # no meta.json: incomplete
    assert main(["verdict", str(bare), "--preset", "demosonly_1gpu"]) == 5
    assert " -m fontaine_engine score " not in capsys.readouterr().out
