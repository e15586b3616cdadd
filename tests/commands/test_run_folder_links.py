"""Symbolic links in and to a run folder, through real subprocesses.

A link to a run folder's log is read as that log: its folder's frozen prereg.json and blind
hold, as they do for the log named directly. A file the program writes in a run folder is
never written through a link planted in its place: refused in one line, exit 2, the file the
link points to untouched. `seal` never carries into a bundle a file a link points to outside
the run folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.commands.test_blind import SECRETS, blind_preset, cli, run_folder


def raw_preset(tmp_path: Path) -> str:
    """The run's preset without `blind = true`: what `-p` would read a loose log with."""
    blind_preset(tmp_path, blind=False).rename(tmp_path / "rawp.toml")
    return "./rawp.toml"


def test_a_link_to_a_blinded_runs_log_is_read_as_that_log(tmp_path: Path) -> None:
    root = run_folder(tmp_path, 750)  # blinded, frozen, read before its endpoint
    raw = raw_preset(tmp_path)
    (tmp_path / "linked.jsonl").symlink_to(root.relative_to(tmp_path) / "train_log.jsonl")
    for cmd in (["verdict"], ["replay", "--plain"]):
        direct = cli(tmp_path, *cmd, "run/train_log.jsonl", "-p", raw)
        linked = cli(tmp_path, *cmd, "linked.jsonl", "-p", raw)
        said = linked.stdout + linked.stderr
        assert linked.returncode == direct.returncode == 2, said
        assert not any(s in said for s in SECRETS), said
        err = linked.stderr.strip().splitlines()
        assert len(err) == 1 and "differs from the run's frozen pre-registration" in err[0]
        assert "run/prereg.json" in err[0], err
        # without -p: the frozen, blind preset, as for the log itself
        blind = cli(tmp_path, *cmd, "linked.jsonl")
        said = blind.stdout + blind.stderr
        assert "BLINDED" in said and "AMBIGUOUS" not in said, said
        direct = cli(tmp_path, *cmd, "run/train_log.jsonl")
        assert blind.stdout.replace("linked.jsonl", "run/train_log.jsonl") == direct.stdout


def planted(root: Path, name: str, victim: Path, text: str = "") -> None:
    """`name` in the run folder replaced by a link to `victim`, a file the program never made
    (empty by default: read as an empty ledger or trail, and appended to)."""
    victim.write_text(text)
    (root / name).unlink(missing_ok=True)
    (root / name).symlink_to(victim)


def refused(res, name: str, victim: Path, text: str = "") -> None:
    err = res.stderr.strip().splitlines()
    assert res.returncode == 2, res.stdout + res.stderr
    assert len(err) == 1 and name in err[0] and "symbolic link" in err[0], err
    assert "Traceback" not in res.stderr
    assert victim.read_text() == text


def test_amend_and_a_look_never_write_through_a_planted_link(tmp_path: Path) -> None:
    root = run_folder(tmp_path, 750)
    victim = tmp_path / "v.txt"
    planted(root, "amendments.jsonl", victim)
    refused(cli(tmp_path, "amend", "run", "--extend-to", "1500"), "amendments.jsonl", victim)
    (root / "amendments.jsonl").unlink()
    planted(root, "review.jsonl", victim)
    look = cli(tmp_path, "verdict", "run", "--unblind", "a look")
    refused(look, "review.jsonl", victim)
    assert not any(s in look.stdout for s in SECRETS), look.stdout


def test_a_ledger_head_planted_as_a_link_is_not_replaced(tmp_path: Path) -> None:
    root = run_folder(tmp_path, 750, blind=False)
    assert cli(tmp_path, "amend", "run", "--extend-to", "1500").returncode == 0
    victim, head = tmp_path / "v.txt", root / "amendments.jsonl.head"
    planted(root, head.name, victim, head.read_text())  # the same bytes, through a link
    text = victim.read_text()
    refused(cli(tmp_path, "amend", "run", "--extend-to", "2000"), head.name, victim, text)
    assert head.is_symlink()  # left as it is


TRAINER = """import json, os
out = os.environ["FONTAINE_OUTPUT_DIR"]
with open(os.path.join(out, "metrics.jsonl"), "a") as fh:
    for s in range(1, 41):
        rec = {"step": s, "loss": 2.0 - s / 40}
        if s % 10 == 0:
            rec["eval_loss"] = 1.8 - s / 100
        fh.write(json.dumps(rec) + "\\n")
"""


def test_babysit_never_appends_through_a_planted_link(tmp_path: Path) -> None:
    (tmp_path / "trainer.py").write_text(TRAINER)
    (tmp_path / "cmd.toml").write_text(f'''[run]
name = "cmd"
output_dir = "runs/cmd"
[command]
argv = ["{sys.executable}", "trainer.py"]
[source]
kind = "jsonl"
[verdict]
metric = "eval_loss"
anchor_step = 20
endpoint_step = 40
healthy_max = 0.0
drift_min = 0.2
''')
    state = {"XDG_STATE_HOME": str(tmp_path / "state")}
    done = cli(tmp_path, "launch", "cmd.toml", "--plain", "--poll", "0.2", **state)
    assert "command finished at step 40" in done.stdout, done.stdout + done.stderr
    root = tmp_path / "runs" / "cmd"
    victim = tmp_path / "v.txt"
    planted(root, "babysit.jsonl", victim)
    refused(cli(tmp_path, "babysit", "runs/cmd", "--once", **state), "babysit.jsonl", victim)


@pytest.mark.parametrize("name", ["train_log.jsonl", "train_log.jsonl.1"])
def test_seal_never_carries_a_file_a_planted_link_points_to(tmp_path: Path, name: str) -> None:
    root = run_folder(tmp_path, 1000, blind=False)
    outside = tmp_path / "x" / "netrc-ish"
    outside.parent.mkdir()
    if name == "train_log.jsonl":  # the log itself moved out, a link left in its place
        (root / name).rename(outside)
    else:
        outside.write_text('{"kind": "meta", "secret": "machine example login me"}\n')
    (root / name).symlink_to(outside)
    res = cli(tmp_path, "seal", "run")
    err = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(err) == 1, res.stdout + res.stderr
    assert f"run/{name}" in err[0] and "outside the run folder" in err[0], err
    assert not list(root.glob("*.seal.zip"))
