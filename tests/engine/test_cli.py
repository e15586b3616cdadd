"""Bad flags: exactly one line on stderr, `engine: error: ...` naming the flag, exit 2."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.engine

from tests.engine.conftest import run_engine, tiny_argv  # noqa: E402


def _replace(argv, flag, value):
    argv = list(argv)
    argv[argv.index(flag) + 1] = value
    return argv


def _bad_cases(tmp_path, data):
    base = tiny_argv(tmp_path / "out", data)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    cases = [
        ("--batch-size", _replace(_replace(base, "--batch-size", "20"), "--backward-chunks", "8")),
        ("--device", _replace(base, "--device", "tpu")),
        ("--output-dir", _replace(base, "--output-dir", str(blocker / "run"))),
        ("--image-augment", _replace(base, "--image-augment", "1.5")),
        ("--steps", _replace(base, "--steps", "0")),
        ("--model-size", _replace(base, "--model-size", "huge")),
        ("--init", base + ["--init", str(tmp_path / "no-such-checkpoint")]),
        ("--run-name", _replace(base, "--run-name", " ")),
    ]
    if not torch.cuda.is_available():
        cases.append(("--device", _replace(base, "--device", "cuda")))
    return cases


def test_bad_flags_exit_2_with_one_line(tmp_path, corpus_dir, capsys):
    from fontaine_engine.cli import main

    cases = _bad_cases(tmp_path, corpus_dir)
    for flag, argv in cases:
        assert main(argv[3:]) == 2, flag
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and captured.out == "", (flag, captured)
        assert lines[0].startswith("engine: error: ") and flag in lines[0], lines[0]
    assert not (tmp_path / "out" / "train_log.jsonl").exists()
    print(f"{len(cases)} bad invocations rejected with exit 2")


def test_bad_flag_as_a_real_process(tmp_path, corpus_dir):
    argv = _replace(tiny_argv(tmp_path, corpus_dir), "--batch-size", "15")
    proc = run_engine(argv, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "engine: error: --batch-size 15: expected a multiple of --backward-chunks x world size "
        "(2 x 1 = 2); or state the per-rank micro-batch with --micro-batch M (chunks per rank = "
        "batch-size / (M x world size))"
    ]
    assert not (tmp_path / "train_log.jsonl").exists()


def test_the_engines_process_ends_with_its_heap_frozen(tmp_path, corpus_dir):
    """`python -m fontaine_engine` freezes the heap once its command returned: the
    interpreter's last collection at exit then skips the objects torch made."""
    import subprocess
    import sys

    from tests.engine.conftest import REPO, engine_env

    argv = _replace(tiny_argv(tmp_path, corpus_dir), "--batch-size", "15")[3:]
    code = (
        "import atexit, gc, runpy, sys\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
        f"sys.argv = ['fontaine_engine', *{argv!r}]\n"
        "runpy.run_module('fontaine_engine', run_name='__main__')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=engine_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr  # the bad flag's exit code is kept
    assert proc.stdout.strip() == "frozen True", proc.stdout + proc.stderr
