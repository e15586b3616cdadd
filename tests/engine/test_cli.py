"""Bad flags: exactly one line on stderr, `engine: error: ...` naming the flag, exit 2."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.engine

from conftest import run_engine, tiny_argv  # noqa: E402


def _replace(argv, flag, value):
    argv = list(argv)
    argv[argv.index(flag) + 1] = value
    return argv


def _bad_cases(tmp_path, data):
    base = tiny_argv(tmp_path / "out", data)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    cases = [
        ("--batch-size", _replace(base, "--batch-size", "20")),  # 20 % (8 chunks) != 0
        ("--device", _replace(base, "--device", "tpu")),
        ("--output-dir", _replace(base, "--output-dir", str(blocker / "run"))),
        ("--image-augment", _replace(base, "--image-augment", "1.5")),
        ("--init", base + ["--init", str(tmp_path / "no-such-checkpoint")]),
    ]
    cases[0] = ("--batch-size", _replace(cases[0][1], "--backward-chunks", "8"))
    if not torch.cuda.is_available():
        cases.append(("--device", _replace(base, "--device", "cuda")))
    return cases


def test_bad_flags_exit_2_with_one_line(tmp_path, corpus_dir):
    cases = _bad_cases(tmp_path, corpus_dir)
    for flag, argv in cases:
        proc = run_engine(argv, timeout=60)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, (flag, proc.stderr)
        assert len(lines) == 1, (flag, proc.stderr)
        assert lines[0].startswith("engine: error: ") and flag in lines[0], lines[0]
        assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out" / "train_log.jsonl").exists()
    print(f"{len(cases)} bad invocations rejected with exit 2")
