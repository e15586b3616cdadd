"""The engine never deletes or overwrites what it did not create.

--data-dir pointed at a user's folder is refused (exit 2, one line) and every file in it stays
byte for byte; a corpus folder of ours (it carries the marker) is still rebuilt when it is
half-written; a fresh run never writes into another run's log or checkpoints.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.engine

from tests.engine.conftest import engine_env, run_engine, tiny_argv  # noqa: E402


def _tree(root: Path) -> dict[str, tuple[str, int]]:
    """Every file and folder under root: relative path -> (sha256 or 'dir', mode)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = ("dir", p.stat().st_mode)
        for name in filenames:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = (
                hashlib.sha256(p.read_bytes()).hexdigest(),
                p.stat().st_mode,
            )
    return out


def _user_folder(root: Path) -> Path:
    (root / "episodes").mkdir(parents=True)
    (root / "README.md").write_text("my real dataset\n")
    (root / "episodes" / "ep0.parquet").write_bytes(os.urandom(4096))
    (root / "manifest.json").write_text('{"not": "the engine\'s"}')  # a look-alike name
    (root / ".hidden").write_bytes(b"\x00\x01")
    return root


def test_a_user_folder_as_data_dir_is_refused_and_kept_byte_for_byte(tmp_path, capsys):
    from fontaine_engine.cli import main

    data = _user_folder(tmp_path / "my-dataset")
    before = _tree(data)
    argv = tiny_argv(tmp_path / "out", data)
    assert main(argv[3:]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("engine: error: --data-dir ")
    assert str(data) in err[0] and "nothing in it was touched" in err[0]
    assert _tree(data) == before
    assert not (tmp_path / "out" / "train_log.jsonl").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my-dataset", "out"]


def test_data_dir_dot_in_a_real_process_touches_nothing(tmp_path):
    home = _user_folder(tmp_path / "home")
    before = _tree(home)
    argv = tiny_argv(tmp_path / "out", Path("."))
    # run from inside the user's folder, as `--data-dir .` would be typed
    proc = subprocess.run(
        argv, cwd=home, env=engine_env(), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert _tree(home) == before


def test_parity_refuses_a_user_folder_too(tmp_path, capsys):
    from fontaine_engine.cli import main

    data = _user_folder(tmp_path / "ds")
    before = _tree(data)
    assert main(["parity", "--data-dir", str(data)]) == 2
    assert "--data-dir" in capsys.readouterr().err
    assert _tree(data) == before


def test_a_half_written_cache_of_ours_is_rebuilt(tmp_path, corpus_dir):
    from fontaine_engine import corpus

    root = tmp_path / "corpus-v2"
    shutil.copytree(corpus_dir, root)
    assert corpus.is_ours(root)
    (root / "rig/videos/observation.images.top/chunk-000/file-000.mp4").unlink()
    with open(root / "demos/data/chunk-000/file-000.parquet", "r+b") as f:
        f.truncate(100)
    assert corpus.check_dir(root) == "rebuild"
    assert corpus.ensure(root) is True
    assert corpus.check_dir(root) == "use" and corpus.ensure(root) is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus-v2"]  # no temp left behind


@pytest.mark.parametrize("where", ["notes.txt", "demos/notes.txt", "rig/meta/mine.json"])
def test_a_cache_of_ours_with_a_user_file_in_it_is_not_rebuilt(tmp_path, corpus_dir, where):
    from fontaine_engine import corpus

    root = tmp_path / "corpus-v2"
    shutil.copytree(corpus_dir, root)
    (root / "demos/meta/stats.json").unlink()
    (root / where).write_text("mine")
    before = _tree(root)
    with pytest.raises(corpus.CorpusError, match=Path(where).name):
        corpus.ensure(root)
    assert _tree(root) == before


def test_discarding_an_old_cache_removes_only_what_the_engine_wrote(tmp_path, corpus_dir):
    from fontaine_engine import corpus

    root = tmp_path / "old"
    shutil.copytree(corpus_dir, root)
    (root / "demos/videos/observation.images.top/notes.txt").write_text("mine")
    corpus._discard(root)
    left = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    assert left == [
        "demos",
        "demos/videos",
        "demos/videos/observation.images.top",
        "demos/videos/observation.images.top/notes.txt",
    ]


def test_an_empty_folder_is_filled_and_a_copied_corpus_is_read_as_a_dataset(tmp_path, corpus_dir):
    from fontaine_engine import corpus

    empty = tmp_path / "empty"
    empty.mkdir()
    assert corpus.ensure(empty) is True and corpus.is_ours(empty)
    copy = tmp_path / "copy"
    shutil.copytree(corpus_dir, copy)
    (copy / corpus.MARKER).unlink()  # a user's copy: not ours, but LeRobot datasets
    before = _tree(copy)
    assert corpus.check_dir(copy) == "use" and corpus.ensure(copy) is False
    assert _tree(copy) == before


def test_a_file_as_data_dir_is_refused(tmp_path):
    from fontaine_engine import corpus

    f = tmp_path / "data"
    f.write_text("x")
    with pytest.raises(corpus.CorpusError, match="not a folder"):
        corpus.ensure(f)
    assert f.read_text() == "x"


def test_a_fresh_run_never_writes_into_another_runs_folder(tmp_path, corpus_dir, capsys):
    from fontaine_engine.cli import main

    out = tmp_path / "out"
    (out / "checkpoints" / "step-000010").mkdir(parents=True)
    (out / "train_log.jsonl").write_text('{"kind":"meta","step":0,"time":1}\n')
    before = _tree(out)
    assert main(tiny_argv(out, corpus_dir)[3:]) == 2
    err = capsys.readouterr().err
    assert "--output-dir" in err and "--resume" in err and "train_log.jsonl" in err
    assert _tree(out) == before


def test_a_step_folder_that_is_not_our_checkpoint_is_left_untouched(tmp_path, corpus_dir):
    from fontaine_engine import checkpoint, corpus

    stats = corpus.load(corpus_dir).stats()
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(model.parameters())
    root = tmp_path / "checkpoints"
    first = checkpoint.save(root, 10, model, opt.state_dict(), stats, {"step": 10})
    assert checkpoint.is_complete(first)
    again = checkpoint.save(root, 10, model, opt.state_dict(), stats, {"step": 10})  # ours
    assert again == first and checkpoint.is_complete(again)
    theirs = root / "step-000020"
    theirs.mkdir()
    (theirs / "weights.bin").write_bytes(b"user data")
    with pytest.raises(checkpoint.CheckpointError, match="weights.bin"):
        checkpoint.save(root, 20, model, opt.state_dict(), stats, {"step": 20})
    assert (theirs / "weights.bin").read_bytes() == b"user data"
    assert sorted(p.name for p in root.iterdir()) == ["step-000010", "step-000020"]


def test_run_name_defaults_to_the_output_folder_name(tmp_path, corpus_dir):
    import json

    out = tmp_path / "my_run_7"
    argv = [a for a in tiny_argv(out, corpus_dir, steps=2) if a not in ("--run-name", "t")]
    argv[argv.index("--eval-every") + 1] = "2"
    proc = run_engine(argv)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "train_log.jsonl").read_text().splitlines()[0])
    assert meta["kind"] == "meta" and meta["run"] == "my_run_7"
