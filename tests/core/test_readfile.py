"""Every file a command reads is a regular file of a bounded size: a FIFO, /dev/zero or an
oversized file in its place is refused at once, one line naming it, exit 2 (real FIFOs,
real commands under a timeout)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.errors import InputError
from tests.core.log.formats.conftest import foreign_preset
from tests.core.verdict.test_ledger_chain import three
from tests.logs import write_log

ROOT = Path(__file__).parents[2]


def cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def refused(res: subprocess.CompletedProcess[str], path: Path, what: str = "") -> None:
    assert res.returncode == 2, (res.returncode, res.stdout[-500:], res.stderr[-2000:])
    assert res.stderr.count("\n") == 1, res.stderr
    assert str(path) in res.stderr and (what or "not a regular file") in res.stderr, res.stderr


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("name", ["prereg.json", "amendments.jsonl", "amendments.jsonl.head"])
@pytest.mark.parametrize("command", ["verdict", "bank", "amend"])
def test_a_fifo_in_a_launched_run_folder_is_refused(tmp_path, name, command, bank_path):
    if command == "bank" and name != "prereg.json":
        pytest.skip("bank reads prereg.json, not the ledger")
    folder, _ = three(tmp_path)
    path = fifo(folder.root / name)
    argv = {
        "verdict": ["verdict", str(folder.root)],
        "bank": ["bank", "add", str(folder.root), "--as", "x"],
        "amend": ["amend", str(folder.root), "--scale-factor", "3"],
    }[command]
    refused(cli(*argv), path)


def test_a_fifo_as_the_log_or_a_preset_is_refused(tmp_path):
    folder, _ = three(tmp_path)
    preset = fifo(tmp_path / "p.toml")
    refused(cli("verdict", str(folder.root), "--preset", str(preset)), preset)
    log = fifo(folder.log)
    for argv in (
        ["verdict", str(folder.root)],
        ["replay", str(folder.root), "--plain"],
        ["bank", "add", str(folder.root), "--as", "y"],
    ):
        refused(cli(*argv), log)


def test_a_fifo_as_the_registry_is_refused(tmp_path):
    reg = fifo(tmp_path / "babysit.toml")
    refused(cli("runs", env={"FONTAINE_REGISTRY": str(reg)}), reg)


FOREIGN = {  # file made a FIFO, the preset's [source], the file's place
    "hf_trainer": ("trainer_state.json", 'kind = "hf_trainer"'),
    "csv": ("metrics.csv", 'kind = "csv"'),
    "jsonl": ("log.jsonl", 'kind = "jsonl"'),
    "mlflow": ("mlflow.db", 'kind = "mlflow"'),
    "tensorboard": ("events.out.tfevents.2.host", 'kind = "tensorboard"'),
}


@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_a_fifo_as_a_foreign_file_is_refused(tmp_path, kind, bank_path):
    name, source = FOREIGN[kind]
    run = tmp_path / "run"
    run.mkdir()
    if kind == "tensorboard":  # a real (empty) event file beside the FIFO
        (run / "events.out.tfevents.1.host").write_bytes(b"")
    path = fifo(run / name)
    preset = foreign_preset(tmp_path, source)
    refused(cli("verdict", str(run), "--preset", str(preset)), path)
    refused(cli("replay", str(run), "--preset", str(preset), "--plain"), path)
    if kind != "jsonl":  # bank tells a foreign run by its files (a *.jsonl needs a preset)
        refused(cli("bank", "add", str(run), "--as", "f", "--ended"), path)


@pytest.mark.parametrize("name", ["trainer_state.json", "metrics.csv"])
def test_dev_zero_linked_in_is_refused(tmp_path, name):
    run = tmp_path / "run"
    run.mkdir()
    (run / name).symlink_to("/dev/zero")
    kind = "hf_trainer" if name == "trainer_state.json" else "csv"
    preset = foreign_preset(tmp_path, f'kind = "{kind}"')
    refused(cli("verdict", str(run), "--preset", str(preset)), run / name, "a device")


def test_a_jsonl_linked_to_dev_zero_is_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "log.jsonl").symlink_to("/dev/zero")
    preset = foreign_preset(tmp_path, 'kind = "jsonl"')
    refused(cli("verdict", str(run), "--preset", str(preset)), run / "log.jsonl", "a device")


def test_an_oversized_file_is_refused_naming_its_size(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    state = run / "trainer_state.json"
    with open(state, "wb") as fh:  # sparse: 3 GB on paper, nothing on disk
        fh.truncate(3 << 30)
    preset = foreign_preset(tmp_path, 'kind = "hf_trainer"')
    refused(
        cli("verdict", str(run), "--preset", str(preset)),
        state,
        f"{3 << 30} bytes or more, over the {512 << 20} bytes",
    )
    state.write_bytes(b"{" + b" " * 5000 + b"}")  # a lower limit, as the tests set it
    refused(
        cli("verdict", str(run), "--preset", str(preset), env={"FONTAINE_READ_LIMIT": "4096"}),
        state,
        "5002 bytes or more",
    )


def test_read_whole_refuses_at_once_and_bounds_what_it_reads(tmp_path, monkeypatch):
    from fontaine_tui.core import readfile

    path = fifo(tmp_path / "pipe")
    with pytest.raises(InputError, match=r"pipe: not a regular file \(a FIFO"):
        readfile.read_whole(path)  # no writer: a blocking open would never return
    big = tmp_path / "big"
    big.write_bytes(b"x" * 100)
    assert readfile.read_whole(big, 100) == b"x" * 100
    with pytest.raises(InputError, match="100 bytes or more, over the 99 bytes"):
        readfile.read_whole(big, 99)
    monkeypatch.setenv(readfile.LIMIT_ENV, "10")
    with pytest.raises(InputError, match="over the 10 bytes"):
        readfile.read_whole(big)
    with pytest.raises(InputError, match="not a regular file \\(a device"):
        readfile.read_whole("/dev/zero")


def test_trainer_state_is_read_once(tmp_path, monkeypatch):
    """The run folder's own trainer_state.json is read whole once (by the decoder): the step
    that picks the newest state reads only its first bytes."""
    from fontaine_tui.core import readfile
    from fontaine_tui.core.log.formats import where

    run = tmp_path / "run"
    (run / "checkpoint-10").mkdir(parents=True)
    history = ",".join(f'{{"step": {s}, "loss": 1.0}}' for s in range(1, 5000))
    (run / "trainer_state.json").write_text(
        f'{{"epoch": 1.0, "global_step": 4999, "log_history": [{history}]}}'
    )
    (run / "checkpoint-10" / "trainer_state.json").write_text(
        '{"global_step": 10, "log_history": []}'
    )
    reads: list[str] = []
    whole = readfile.read_whole

    def counted(path, most=None):
        reads.append(Path(path).name)
        return whole(path, most)

    monkeypatch.setattr(where, "read_whole", counted)
    assert where.newest_state(run) == run / "trainer_state.json"
    assert reads == []


def test_our_log_is_still_read(tmp_path):
    log = write_log(tmp_path / "run" / "train_log.jsonl")
    res = cli("verdict", str(log.parent), "--preset", "demosonly_1gpu")
    assert res.returncode != 2, res.stderr
