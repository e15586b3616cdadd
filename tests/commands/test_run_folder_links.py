"""Symbolic links in and to a run folder, through real subprocesses.

A link to a run folder's log is read as that log: its folder's frozen prereg.json and blind
hold, as they do for the log named directly. A file the program writes in a run folder is
never written through a link planted in its place: refused in one line, exit 2, the file the
link points to untouched. `seal` never carries into a bundle a file a link points to outside
the run folder."""

from __future__ import annotations

from pathlib import Path

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
