"""`fontaine-tui demo --plain`: the shipped recorded run, replayed by the real command in a
subprocess, ends with its verdict; it needs no torch and writes nothing outside its own
temporary folder."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.commands import demo
from fontaine_tui.core.bank import store as bank
from fontaine_tui.core.errors import InputError

ROOT = Path(__file__).parents[2]
FAST = ("--speed", "1e6")
# torch (and transformers) poisoned: an `import torch` anywhere on the path raises
POISON = (
    "import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None; "
    "from fontaine_tui.cli import main; rc = main(sys.argv[1:]); "
    "assert 'torch' not in [m.split('.')[0] for m in sys.modules if sys.modules[m]]; "
    "sys.exit(rc)"
)


def tree(path: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(path.rglob("*"))
    }


def run(tmp_path: Path, *argv: str, code: str | None = None) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        FONTAINE_BANK=str(tmp_path / "users-bank"),
        FONTAINE_REGISTRY=str(tmp_path / "users-registry.toml"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    head = ["-c", code] if code else ["-m", "fontaine_tui"]
    return subprocess.run(
        [sys.executable, *head, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo")
    before = tree(Path(demo.__file__).parents[1] / "demo")
    proc = run(tmp, "demo", "--plain", *FAST)
    return tmp, proc, before


def test_demo_plain_ends_with_the_verdict(plain):
    tmp, proc, _ = plain
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "demo verdict: HEALTHY (final, step 300 of 300, delta -1.9247)"
    assert "probe step 150: eval_chunk_mae 21.9957  train_chunk_mae 18.2155" in lines
    assert "-- end of replay (train_log.jsonl)" in lines
    # read against the banked 2-rank run: its curve decides when the read locked
    out = proc.stdout
    assert "comparator dist2 -1.9247 (banked run, vm, 2 rank(s), cpu, demo_2rank_cpu@" in out
    assert "decision locked at step 250 (HEALTHY)" in out
    assert "banked run (its bank entry is not here)" not in out
    assert proc.stderr == ""


def test_demo_touches_neither_the_package_nor_the_users_bank(plain):
    tmp, proc, before = plain
    assert proc.returncode == 0, proc.stderr
    assert tree(Path(demo.__file__).parents[1] / "demo") == before
    assert not (tmp / "users-bank").exists()
    assert not (tmp / "users-registry.toml").exists()
    assert sorted(p.name for p in tmp.iterdir()) == []  # its cwd: nothing written there
    following = proc.stdout.splitlines()[0]
    folder = Path(following.removeprefix("following replay ")).parents[1]
    assert folder.name.startswith("fontaine-demo-") and not folder.exists()  # removed after


def test_demo_runs_with_torch_poisoned(tmp_path):
    """Nothing on the demo's path imports torch: the console installs without it."""
    proc = run(tmp_path, "demo", "--plain", *FAST, code=POISON)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("demo verdict: HEALTHY (final")


def test_the_shipped_comparator_is_the_one_the_prereg_pins():
    data = demo.shipped()
    doc = json.loads((data / "bank" / f"{demo.COMPARATOR}.json").read_bytes())
    prereg = json.loads((data / "run" / "prereg.json").read_bytes())
    pinned = prereg["preset"]["comparators"]["dist2"]["bank"]
    name, _, sha = pinned.partition("@")
    assert name == demo.COMPARATOR
    assert hashlib.sha256(bank.canonical(doc)).hexdigest() == sha


def test_shipped_data_stays_small():
    total = sum(
        p.stat().st_size
        for p in (Path(demo.__file__).parents[1] / "demo").rglob("*")
        if p.is_file()
    )
    assert total < 200_000, total


def test_bad_speed_is_one_line(tmp_path):
    proc = run(tmp_path, "demo", "--speed", "0")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "--speed" in proc.stderr


def test_a_build_without_the_recording_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "shipped", lambda: tmp_path / "missing")
    with pytest.raises(InputError, match="missing from this installation"):
        demo.unpack(tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_ends_the_demo_and_removes_its_folder(tmp_path, sig):
    """A closed terminal (SIGHUP) or a SIGTERM mid-replay: the temporary copy goes too."""
    env = dict(
        os.environ,
        FONTAINE_BANK=str(tmp_path / "users-bank"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "fontaine_tui", "demo", "--plain", "--speed", "1"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        first = proc.stdout.readline()
        folder = Path(first.strip().removeprefix("following replay ")).parents[1]
        assert folder.name.startswith("fontaine-demo-") and (folder / "run").is_dir()
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == 128 + sig
        assert not folder.exists()
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
