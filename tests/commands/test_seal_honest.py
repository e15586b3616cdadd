"""`seal` then `verify` of honest runs: the bundle holds what the verdict reads.

Each run is made the way a user makes it: a [command] trainer launched with `launch --plain`
(stopped on its lock by `[gates] stop_on_lock`; killed from outside once and restarted by
`[recovery]`; writing its metrics through a link that `[source] path` names), and the recorded
demo run read against its banked comparator. Each is sealed and verified with the command line;
an honest bundle verifies, its verdict recomputed from the bundle alone, the same.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fontaine_tui.core.bank import store
from fontaine_tui.core.seal.bundle import pack
from tests.commands.test_recovery import _end, _launch, _paused, _preset
from tests.commands.test_stop_on_lock_gate import launch as launch_gated

pytestmark = pytest.mark.slow
DEMO = Path(__file__).parents[2] / "fontaine_tui" / "demo"


def cli(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *args],
        cwd=cwd,
        env={**{k: v for k, v in os.environ.items() if k != "FONTAINE_NOTIFY"}, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def sealed_and_verified(tmp_path: Path, folder: Path, **env: str) -> dict[str, bytes]:
    """Seal `folder`, verify the bundle elsewhere (the run folder moved away); its entries."""
    out = tmp_path / "run.seal.zip"
    done = cli(tmp_path, "seal", str(folder), "-o", str(out), **env)
    assert done.returncode == 0, done.stdout + done.stderr
    shutil.move(folder, tmp_path / "moved-away")  # verify reads the bundle alone
    checked = cli(tmp_path, "verify", str(out), **env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "verdict.json: recomputed from the bundled evidence, the same" in checked.stdout
    with zipfile.ZipFile(out) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def test_a_run_stopped_on_its_lock_verifies(tmp_path: Path) -> None:
    res, folder = launch_gated(
        tmp_path,
        {0: 3.0},
        100,
        10,
        "anchor_step = 10\nhealthy_max = 50.0\ndrift_min = 100.0\nmax_probe_change = 0.5\n",
    )
    assert "stop_on_lock stops the run" in res.stdout, res.stdout + res.stderr
    files = sealed_and_verified(tmp_path, folder.root)
    assert "attempts.jsonl" in files  # the gate's stop: the verdict reads it there
    verdict = json.loads(files["verdict.json"])
    assert (verdict["verdict"], verdict["provisional"]) == ("HEALTHY", False), verdict


def test_a_run_restarted_once_by_recovery_verifies(tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "rec"
    preset = _preset(tmp_path, "once", "[recovery]\nmax_restarts = 2\nbackoff_s = 0.1")
    proc = _launch(tmp_path, preset)
    os.killpg(_paused(folder, proc, 1), signal.SIGKILL)
    code, out = _end(proc)
    assert "(restart 1 of 2)" in out, out[-3000:]
    files = sealed_and_verified(tmp_path, folder)
    begins = [json.loads(x) for x in files["attempts.jsonl"].splitlines()]
    assert [a["attempt"] for a in begins if a["event"] == "begin"] == [1, 2]
    assert json.loads(files["verdict.json"])["recovery"]["used"] == 1


LINKED = """import json, os, sys
out, target = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
os.makedirs(os.path.dirname(os.path.join(out, target)), exist_ok=True)
os.symlink(target, os.path.join(out, "latest.jsonl"))  # the trainer's "latest" link
with open(os.path.join(out, target), "w") as fh:
    for s in range(1, 41):
        rec = {"step": s, "loss": 2.0 - s / 40}
        if s % 10 == 0:
            rec["eval_loss"] = 1.8 - s / 100
        fh.write(json.dumps(rec) + "\\n")
"""


@pytest.mark.parametrize(
    "target",
    ["logs/v1/metrics.jsonl", "../elsewhere/metrics.jsonl"],
    ids=["inside the run folder", "outside it"],
)
def test_a_source_path_that_is_a_link_verifies(tmp_path: Path, target: str) -> None:
    (tmp_path / "trainer.py").write_text(LINKED)
    (tmp_path / "link.toml").write_text(f"""[run]
name = "link"
output_dir = "runs/link"
[command]
argv = ["{sys.executable}", "{tmp_path / "trainer.py"}", "{{output_dir}}", "{target}"]
[source]
kind = "jsonl"
path = "latest.jsonl"
[verdict]
metric = "eval_loss"
anchor_step = 10
endpoint_step = 40
healthy_max = 0.0
drift_min = 0.2
""")
    done = cli(tmp_path, "launch", "./link.toml", "--plain", "--poll", "0.2")
    assert "command finished at step 40" in done.stdout, done.stdout + done.stderr
    folder = tmp_path / "runs" / "link"
    assert (folder / "latest.jsonl").is_symlink()
    files = sealed_and_verified(tmp_path, folder)
    assert "evidence/latest.jsonl" in files  # under the name the preset reads it by


def seal_with_bank(tmp_path: Path) -> Path:
    """The demo run sealed where the bank holds its comparator; the bank then removed."""
    run = tmp_path / "run"
    shutil.copytree(DEMO / "run", run)
    bank = tmp_path / "bank"
    store.put_whole(
        "demo_2rank_cpu",
        json.loads((DEMO / "bank" / "demo_2rank_cpu.json").read_bytes()),
        root=bank,
    )
    out = tmp_path / "demo.seal.zip"
    done = cli(tmp_path, "seal", str(run), "-o", str(out), FONTAINE_BANK=str(bank))
    assert done.returncode == 0, done.stderr
    shutil.rmtree(bank)
    return out


def test_verify_where_the_bank_is_absent_reads_the_bundles_own(tmp_path: Path) -> None:
    """The demo run reads a banked comparator (its curve, the lock's largest change). Sealed
    where the bank holds it, the bundle verifies where no bank is, and says how."""
    out = seal_with_bank(tmp_path)
    with zipfile.ZipFile(out) as zf:
        verdict = json.loads(zf.read("verdict.json"))
        assert [n for n in zf.namelist() if n.startswith("bank/demo_2rank_cpu/")]
    assert verdict["comparators"][0]["curve"], verdict["comparators"]  # read from the bank
    checked = cli(tmp_path, "verify", str(out), FONTAINE_BANK=str(tmp_path / "no-bank"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "verdict.json: recomputed from the bundled evidence, the same" in checked.stdout
    said = [line for line in checked.stdout.splitlines() if "demo_2rank_cpu" in line]
    assert len(said) == 1 and "read from the bundle" in said[0], checked.stdout
    assert not (tmp_path / "no-bank").exists()  # the user's bank is never written


def test_an_edited_banked_run_in_a_bundle_is_named(tmp_path: Path) -> None:
    """A bundle re-packed with another banked run under the pinned sha256: one line."""
    out = seal_with_bank(tmp_path)
    with zipfile.ZipFile(out) as zf:
        files = {n: zf.read(n) for n in zf.namelist()}
    manifest = json.loads(files.pop("MANIFEST.json"))
    [name] = [n for n in files if n.startswith("bank/")]
    files[name] = files[name].replace(b'"probes":', b'"probes" :', 1)
    forged = tmp_path / "forged.zip"
    forged.write_bytes(pack(files, manifest["run"], manifest["evidence"])[0])
    checked = cli(tmp_path, "verify", str(forged))
    assert checked.returncode == 2, checked.stdout
    assert checked.stderr.count("\n") == 1 and f": {name}: " in checked.stderr, checked.stderr
    assert "does not match its sha256" in checked.stderr


def test_verify_says_the_bank_entry_the_bundle_does_not_carry(tmp_path: Path) -> None:
    """Sealed where the bank did not hold the comparator: the bundle cannot carry it, and
    verify says in one line what neither read."""
    run = tmp_path / "run"
    shutil.copytree(DEMO / "run", run)
    out = tmp_path / "demo.seal.zip"
    assert cli(tmp_path, "seal", str(run), "-o", str(out)).returncode == 0
    checked = cli(tmp_path, "verify", str(out))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    said = [line for line in checked.stdout.splitlines() if "demo_2rank_cpu" in line]
    assert len(said) == 1 and "not in the bundle" in said[0], checked.stdout
