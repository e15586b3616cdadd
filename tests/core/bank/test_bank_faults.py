"""`bank` with a NaN in the log's meta record or in prereg.json, or onto a full disk: one
line naming the file and key (or the folder and the reason), exit 2, and nothing
half-written left in the bank."""

from __future__ import annotations

import math
import os
import subprocess
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.bank import store as bank
from tests.logs import records, write_log

PAGE = 4096


def _run(tmp_path: Path, name: str = "a", nan_meta: bool = False) -> Path:
    recs = records()
    if nan_meta:
        recs[0]["recipe"] = {"batch_size": 96, "lr": math.nan}
    folder = tmp_path / name
    write_log(folder / "train_log.jsonl", recs)
    return folder


def _one_line(capsys: pytest.CaptureFixture[str], *says: str) -> None:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for s in says:
        assert s in err, err


def test_nan_in_the_meta_record_is_named(tmp_path, bank_path, capsys) -> None:
    assert main(["bank", "add", str(_run(tmp_path, nan_meta=True)), "--as", "a"]) == 2
    _one_line(
        capsys, "the log's meta record: recipe.lr: nan is not a finite number", "nothing was banked"
    )
    assert not bank_path.exists()


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_nan_in_prereg_is_named(tmp_path, bank_path, capsys, value: str) -> None:
    folder = _run(tmp_path)
    (folder / "prereg.json").write_text('{"preset": {"verdict": {"bound": [1, ' + value + "]}}}")
    assert main(["bank", "add", str(folder), "--as", "a"]) == 2
    _one_line(capsys, "prereg.json: preset.verdict.bound[1]:", "nothing was banked")
    assert not bank_path.exists()


def test_deep_prereg_is_not_json(tmp_path, bank_path, capsys) -> None:
    folder = _run(tmp_path)
    (folder / "prereg.json").write_text("[" * 100_000 + "]" * 100_000)
    assert main(["bank", "add", str(folder), "--as", "a"]) == 2
    _one_line(capsys, "prereg.json is not JSON")


@pytest.fixture
def tiny(tmp_path: Path):
    """A 64 KiB tmpfs (root only): a file system that fills up for real."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(mnt: Path, free_pages: int) -> None:
    """Take all of the file system but `free_pages` pages."""
    st = os.statvfs(mnt)
    left = st.f_bavail * st.f_frsize
    with open(mnt / "filler", "ab") as fh:
        fh.write(b"\0" * (left - free_pages * PAGE))
    assert os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize == free_pages * PAGE


def test_a_full_disk_leaves_nothing(tmp_path, tiny, monkeypatch, capsys) -> None:
    root = tiny / "bank"
    monkeypatch.setenv("FONTAINE_BANK", str(root))
    _fill(tiny, 0)
    assert main(["bank", "add", str(_run(tmp_path)), "--as", "a"]) == 2
    _one_line(capsys, f"{root / 'a'}: cannot bank (No space left on device)", "nothing was banked")
    assert sorted(p.name for p in tiny.iterdir()) == ["filler"]


def test_a_disk_full_before_current_keeps_the_old_version(
    tmp_path, tiny, monkeypatch, capsys
) -> None:
    root = tiny / "bank"
    monkeypatch.setenv("FONTAINE_BANK", str(root))
    assert main(["bank", "add", str(_run(tmp_path, "a")), "--as", "ref"]) == 0
    first = bank.get("ref").sha256
    other = tmp_path / "b"
    recs = records()
    recs[0]["run"] = "another"
    write_log(other / "train_log.jsonl", recs)
    capsys.readouterr()
    _fill(tiny, 1)  # the new version fits, the new CURRENT does not
    assert main(["bank", "add", str(other), "--as", "ref", "--replace"]) == 2
    _one_line(capsys, "cannot bank (No space left on device)", "nothing was banked")
    assert bank.get("ref").sha256 == first
    assert bank.versions("ref") == [first]
    # no half-written file left (the name's lock file is the bank's own, from the first put)
    assert not [
        p for p in (root / "ref").iterdir() if p.name.startswith(".") and p.name != bank.LOCK
    ]
