"""`fontaine-tui bank add` of a blinded run: the bank never keeps a hidden read.

A [command] run's trainer log (JSONL) says nothing of its end, so a blinded run can be banked
(`--ended`) before its endpoint, where `verdict` still hides the read: the banked document
would hold every probe and `bank show -j` print it. `bank add` reads the run as `verdict`
does and refuses such a run in one line (exit 2, nothing banked) naming how to unblind it,
unless the review trail records a look; the final read banks as always. A run whose review
trail does not hold is refused as `verdict` refuses it, naming the break. A run banked over
SSH (`host:/path`, the real sshd on 127.0.0.1) is read so too: refused when its read is hidden
(a crashed run's, withheld by the evidence gate) unless its review trail, read from its host,
records a look, and refused, naming the break as `verdict` on its host names it, when that
trail does not hold. Real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from tests.commands.test_blind import cli

BLIND = """[run]
name = "blindjsonl"

[source]
kind = "jsonl"
eval_every = 10

[verdict]
metric = "eval/chunk_mae"
anchor_step = 30
endpoint_step = 60
healthy_max = 0.3
drift_min = 1.0
blind = true
"""
READS = {10: 2.9101, 20: 2.8202, 30: 2.7303, 40: 2.9504, 50: 2.9605, 60: 2.9706}


def blinded_run(tmp_path: Path, upto: int) -> Path:
    """A run frozen from a blind [source] preset, its JSONL log written up to step `upto`."""
    preset = tmp_path / "blind.toml"
    preset.write_text(BLIND)
    root = tmp_path / "run"
    root.mkdir()
    freeze(RunFolder(root), load_preset(preset), ["python", "train.py"], "h")
    write_log(root, upto)
    return root


def write_log(root: Path, upto: int, reads: dict[int, float] = READS) -> None:
    """The trainer's JSONL log: a train line every step, an eval line at each of `reads`."""
    with open(root / "log.jsonl", "w") as f:
        for step in range(1, upto + 1):
            f.write(json.dumps({"step": step, "train/loss": 1.0 / step}) + "\n")
            if step in reads:
                f.write(json.dumps({"step": step, "eval/chunk_mae": reads[step]}) + "\n")


def test_bank_add_refuses_a_blinded_run_before_its_endpoint(tmp_path):
    root = blinded_run(tmp_path, 40)
    assert cli(tmp_path, "verdict", str(root)).returncode == 7  # hidden there
    res = cli(tmp_path, "bank", "add", str(root), "--as", "early", "--ended")
    said = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(said) == 1, res.stderr
    assert "blinded until the endpoint (step 60)" in said[0]
    assert f"fontaine-tui verdict {root} --unblind WHY" in said[0]
    assert "nothing was banked" in said[0]
    assert not any(f"{v}" in res.stdout + res.stderr for v in READS.values())
    shown = cli(tmp_path, "bank", "show", "early", "-j")
    assert shown.returncode == 2 and "no such banked run" in shown.stderr
    assert not (root / "review.jsonl").exists()  # refusing records nothing


def test_bank_add_takes_a_blinded_run_once_a_look_at_its_read_is_recorded(tmp_path):
    root = blinded_run(tmp_path, 30)
    assert cli(tmp_path, "verdict", str(root), "--unblind", "at the anchor").returncode != 7
    write_log(root, 40)  # a look at step 30 does not cover the read at 40
    refused = cli(tmp_path, "bank", "add", str(root), "--as", "looked", "--ended")
    assert refused.returncode == 2 and "nothing was banked" in refused.stderr
    assert cli(tmp_path, "verdict", str(root), "--unblind", "banking it early").returncode != 7
    res = cli(tmp_path, "bank", "add", str(root), "--as", "looked", "--ended")
    assert res.returncode == 0, res.stderr
    doc = json.loads(cli(tmp_path, "bank", "show", "looked", "-j").stdout)
    assert sorted(p["step"] for p in doc["probes"]) == [10, 20, 30, 40]


def test_bank_add_takes_a_blinded_run_at_its_endpoint(tmp_path):
    root = blinded_run(tmp_path, 60)
    assert cli(tmp_path, "verdict", str(root)).returncode != 7  # the final read is shown
    res = cli(tmp_path, "bank", "add", str(root), "--as", "final", "--ended")
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("cut", ["edited", "truncated", "removed"])
def test_bank_add_refuses_a_run_whose_review_trail_does_not_hold(tmp_path, cut):
    root = blinded_run(tmp_path, 40)
    for why in ("a first look", "a second look"):
        assert cli(tmp_path, "verdict", str(root), "--unblind", why).returncode != 7
    write_log(root, 60)  # the endpoint: the final read, banked while the trail holds
    trail = root / "review.jsonl"
    if cut == "edited":  # the looks rewritten: nobody looked
        trail.write_text(trail.read_text().replace("a second look", "a quiet check"))
    elif cut == "truncated":  # the last look cut off
        trail.write_text(trail.read_text().splitlines(keepends=True)[0])
    else:
        trail.unlink()
    judged = cli(tmp_path, "verdict", str(root))
    assert judged.returncode == 2, judged.stderr
    [why] = judged.stderr.strip().splitlines()
    res = cli(tmp_path, "bank", "add", str(root), "--as", "final", "--ended")
    said = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(said) == 1, res.stderr
    assert "review.jsonl" in said[0] and "nothing was banked" in said[0], said
    broken = " (the review trail does not hold"
    assert said[0].split(broken)[0] == why.split(broken)[0]  # the break verdict names
    shown = cli(tmp_path, "bank", "show", "final", "-j")
    assert shown.returncode == 2 and "no such banked run" in shown.stderr


def test_bank_add_over_ssh_refuses_a_hidden_read_as_here(sshd, tmp_path):
    """A blinded run that crashed before its endpoint, banked as host:/path: refused as here.

    Its log ended, so the run banks, but the read is withheld (core/run/evidence.py's
    `withheld`): the bank would keep every probe the blind hides. A look recorded on the run's
    host is read from its review trail over SSH, and counts there as it counts here."""
    from tests.commands.test_blind_withheld import PROBES, crashed
    from tests.sshd_helper import HOST_ALIAS

    root = crashed(tmp_path)
    far = f"{HOST_ALIAS}:{root}"
    ssh = ("--ssh-config", str(sshd.config))
    env = {"FONTAINE_BANK": str(tmp_path / "bank")}
    res = cli(tmp_path, "bank", "add", far, "--as", "far", *ssh, **env)
    said = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(said) == 1, res.stdout + res.stderr
    assert "the run ended at step 750, before its endpoint (step 1000)" in said[0]
    assert "nothing was banked" in said[0] and far in said[0]
    assert f"fontaine-tui verdict {root} --unblind WHY" in said[0]
    assert not any(p in res.stdout + res.stderr for p in PROBES)
    # as the run's own conflicts would be named (UNDECIDABLE): refused before them, all the same
    forced = cli(tmp_path, "bank", "add", far, "--as", "far", "--even-if-conflicting", *ssh, **env)
    assert forced.returncode == 2 and "nothing was banked" in forced.stderr, forced.stderr
    shown = cli(tmp_path, "bank", "show", "far", "-j", **env)
    assert shown.returncode == 2 and "no such banked run" in shown.stderr
    assert not (tmp_path / "bank" / "far").exists()

    # a look recorded on its host: read from its review trail over SSH, banked as here
    look = cli(tmp_path, "verdict", str(root), "--unblind", "the run crashed", **env)
    assert look.returncode == 6, look.stdout + look.stderr
    there = cli(tmp_path, "bank", "add", far, "--as", "far", "--even-if-conflicting", *ssh, **env)
    assert there.returncode == 0, there.stderr
    here = cli(tmp_path, "bank", "add", str(root), "--as", "near", "--even-if-conflicting", **env)
    assert here.returncode == 0, here.stderr
    far_doc = json.loads(cli(tmp_path, "bank", "show", "far", "-j", **env).stdout)
    near_doc = json.loads(cli(tmp_path, "bank", "show", "near", "-j", **env).stdout)
    assert far_doc["probes"] == near_doc["probes"] and far_doc["probes"]


@pytest.mark.parametrize("cut", ["edited", "truncated", "removed"])
def test_bank_add_over_ssh_refuses_a_run_whose_review_trail_does_not_hold(sshd, tmp_path, cut):
    """The trail is read from the run's host and held to its chain as here: the break that
    `verdict` names on the host is named, the host's file for the file, and nothing banked."""
    from tests.commands.test_blind import run_folder
    from tests.logs import records_upto
    from tests.logs import write_log as write_ours
    from tests.sshd_helper import HOST_ALIAS

    root = run_folder(tmp_path, 500)
    for why in ("a first look", "a second look"):
        assert cli(tmp_path, "verdict", str(root), "--unblind", why).returncode != 7
    write_ours(root / "train_log.jsonl", records_upto(1000))  # the endpoint: the final read
    trail = root / "review.jsonl"
    if cut == "edited":  # the looks rewritten: nobody looked
        trail.write_text(trail.read_text().replace("a second look", "a quiet check"))
    elif cut == "truncated":  # the last look cut off
        trail.write_text(trail.read_text().splitlines(keepends=True)[0])
    else:
        trail.unlink()
    judged = cli(tmp_path, "verdict", str(root))
    assert judged.returncode == 2, judged.stderr
    [why] = judged.stderr.strip().splitlines()
    far = f"{HOST_ALIAS}:{root}"
    env = {"FONTAINE_BANK": str(tmp_path / "bank")}
    ssh = ("--ssh-config", str(sshd.config))
    res = cli(tmp_path, "bank", "add", far, "--as", "final", *ssh, **env)
    said = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(said) == 1, res.stdout + res.stderr
    assert "review.jsonl" in said[0] and "nothing was banked" in said[0], said
    broken = " (the review trail does not hold"
    # the break verdict names on the host, its file named as the host's
    here = why.split(broken)[0].replace(str(root), f"ssh {far}")
    assert said[0].split(broken)[0] == here, said[0]
    shown = cli(tmp_path, "bank", "show", "final", "-j", **env)
    assert shown.returncode == 2 and "no such banked run" in shown.stderr


def test_bank_add_over_ssh_takes_a_blinded_run_at_its_endpoint(sshd, tmp_path):
    from tests.commands.test_blind import run_folder
    from tests.sshd_helper import HOST_ALIAS

    root = run_folder(tmp_path, 1000)
    env = {"FONTAINE_BANK": str(tmp_path / "bank")}
    far = f"{HOST_ALIAS}:{root}"
    res = cli(
        tmp_path, "bank", "add", far, "--as", "final", "--ssh-config", str(sshd.config), **env
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads(cli(tmp_path, "bank", "show", "final", "-j", **env).stdout)
    assert doc["source"] == f"ssh {far}" and doc["probes"]
