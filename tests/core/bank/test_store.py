"""The comparator bank: a finished run kept by name and sha256; other content under a taken
name only with --replace, the old version kept; an edited entry refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.bank import store as bank
from fontaine_tui.core.errors import InputError
from tests.logs import RIGONLY_LIKE, SCALED_LIKE, records, records_upto, write_log

ROOT = Path(__file__).parents[3]


def run_folder(tmp_path: Path, name: str, probes=RIGONLY_LIKE, finished: bool = True) -> Path:
    folder = tmp_path / name
    write_log(
        folder / "train_log.jsonl",
        records(probes=probes) if finished else records_upto(600, probes),
    )
    return folder


def test_bank_a_finished_run_and_read_it_back(tmp_path, bank_path, capsys):
    folder = run_folder(tmp_path, "a")
    assert main(["bank", "add", str(folder), "--as", "rigonly", "--note", "the fixture"]) == 0
    out = capsys.readouterr().out
    entry = bank.get("rigonly")
    assert out.startswith(f"banked {folder} as rigonly: sha256 {entry.sha256} (4 probes")
    assert sorted(entry.probes()) == [250, 500, 750, 1000]
    assert entry.value(1000, "eval_chunk_mae") == RIGONLY_LIKE[1000][0]
    assert entry.value(1000, "breakdown.rig") == pytest.approx(RIGONLY_LIKE[1000][0] * 1.1)
    doc = entry.doc
    assert (doc["world_size"], doc["device"], doc["host"]) == (1, "cpu", "fixture-host")
    assert doc["train"]["last_step"] == 1000 and doc["note"] == "the fixture"
    path = bank_path / "rigonly" / f"{entry.sha256}.json"
    assert (bank_path / "rigonly" / "CURRENT").read_text().strip() == entry.sha256
    import hashlib

    assert hashlib.sha256(path.read_bytes().rstrip(b"\n")).hexdigest() == entry.sha256
    # the same run again: nothing changes
    assert main(["bank", "add", str(folder), "--as", "rigonly", "--note", "the fixture"]) == 0
    assert capsys.readouterr().out.startswith("unchanged ")
    assert bank.versions("rigonly") == [entry.sha256]


def test_other_content_under_a_taken_name_needs_replace_and_keeps_the_old(tmp_path, capsys):
    main(["bank", "add", str(run_folder(tmp_path, "a")), "--as", "ref"])
    first = bank.get("ref").sha256
    other = run_folder(tmp_path, "b", probes=SCALED_LIKE)
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "bank", "add", str(other), "--as", "ref"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert f"already holds another run (sha256 {first[:12]}); pass --replace" in res.stderr
    assert bank.get("ref").sha256 == first
    assert main(["bank", "add", str(other), "--as", "ref", "--replace"]) == 0
    second = bank.get("ref").sha256
    assert second != first and sorted(bank.versions("ref")) == sorted([first, second])
    pinned = bank.get(f"ref@{first[:8]}")
    assert (pinned.sha256, pinned.current) == (first, False)
    capsys.readouterr()
    assert main(["bank", "list"]) == 0
    assert (
        f"ref                     {second[:12]}     4 probes  2 version(s)"
        in capsys.readouterr().out
    )
    assert main(["bank", "show", f"ref@{first[:8]}"]) == 0
    assert "(not current)" in capsys.readouterr().out


def test_an_edited_bank_entry_is_refused(tmp_path, bank_path):
    main(["bank", "add", str(run_folder(tmp_path, "a")), "--as", "ref"])
    sha = bank.get("ref").sha256
    path = bank_path / "ref" / f"{sha}.json"
    path.write_text(path.read_text().replace('"eval_chunk_mae":3.7929', '"eval_chunk_mae":3.0'))
    with pytest.raises(InputError, match="its content does not match its sha256 \\(edited\\)"):
        bank.get("ref")


def test_the_old_form_still_banks_with_one_deprecation_line(tmp_path, bank_path):
    """`bank RUN --as NAME` (before `bank add`) banks as `bank add` does, and says so once."""
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "fontaine_tui",
            "bank",
            str(run_folder(tmp_path, "a")),
            "--as",
            "old",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr
    assert res.stderr == (
        "fontaine-tui: `bank RUN --as NAME` is deprecated and will be removed "
        "in the next release: use `bank add RUN --as NAME`\n"
    )
    assert res.stdout.startswith("banked ") and bank.get("old").name == "old"
    assert main(["bank", "list"]) == 0  # the new forms take no note


def test_bank_is_three_subcommands(bank_path, capsys):
    assert main(["bank", "--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"    {name} " in out for name in ("add", "list", "show")), out
    assert main(["bank", "list"]) == 0 and capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bank", "add", "RUN", "--as", ".hidden"], "--as: expected a name of letters"),
        (["bank", "add", "RUN"], "the following arguments are required: --as"),
        (["bank", "show"], "the following arguments are required: NAME[@SHA]"),
        (["bank", "show", "nothing"], "bank nothing: no such banked run"),
    ],
)
def test_bad_bank_commands_are_one_line_exit_2(tmp_path, argv, message):
    argv = [str(run_folder(tmp_path, "a")) if a == "RUN" else a for a in argv]
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv], capture_output=True, text=True, cwd=ROOT
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert message in res.stderr


def test_an_unfinished_run_is_not_banked(tmp_path, bank_path):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "fontaine_tui",
            "bank",
            "add",
            str(run_folder(tmp_path, "a", finished=False)),
            "--as",
            "x",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert res.returncode == 2 and "the run has not finished" in res.stderr
    assert not bank_path.exists()


def test_bank_over_ssh(sshd, tmp_path):
    from fontaine_tui.core.log.read import load_log
    from tests.sshd_helper import HOST_ALIAS

    folder = run_folder(tmp_path, "remote")
    assert (
        main(
            [
                "bank",
                "add",
                f"{HOST_ALIAS}:{folder}",
                "--as",
                "far",
                "--ssh-config",
                str(sshd.config),
            ]
        )
        == 0
    )
    entry = bank.get("far")
    assert entry.doc["source"] == f"ssh {HOST_ALIAS}:{folder}"
    local = bank.document(load_log(folder / "train_log.jsonl"), "here")
    assert entry.doc["probes"] == json.loads(json.dumps(local["probes"]))  # as banked JSON
    assert entry.doc["train"] == local["train"]


def _bank_at_once(barrier, folder: str, name: str, codes) -> None:
    import contextlib
    import io

    barrier.wait(30)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["bank", "add", folder, "--as", name])
    codes.put((folder, code))


def test_two_banks_of_one_name_at_once_one_is_refused_nothing_is_lost(tmp_path, bank_path):
    import multiprocessing

    folders = [str(run_folder(tmp_path, "a")), str(run_folder(tmp_path, "b", SCALED_LIKE))]
    ctx = multiprocessing.get_context("fork")
    for round_ in range(12):  # real processes released together, on a fresh name each round
        barrier, codes = ctx.Barrier(2), ctx.Queue()
        procs = [
            ctx.Process(target=_bank_at_once, args=(barrier, f, f"n{round_}", codes))
            for f in folders
        ]
        for p in procs:
            p.start()
        got = dict(codes.get(timeout=60) for _ in procs)
        for p in procs:
            p.join(60)
        assert sorted(got.values()) == [0, 2], (round_, got)  # the loser is refused
        winner = next(f for f, code in got.items() if code == 0)
        entry = bank.get(f"n{round_}")
        assert entry.doc["source"] == winner and bank.versions(f"n{round_}") == [entry.sha256]
    # the same through two `fontaine-tui bank` commands started together
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "fontaine_tui", "bank", "add", f, "--as", "cli"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for f in folders
    ]
    outs = [(p.wait(120), *p.communicate()) for p in procs]
    assert sorted(code for code, _, _ in outs) == [0, 2], outs
    loser = next(err for code, _, err in outs if code == 2)
    assert loser.count("\n") == 1 and "bank cli: already holds another run" in loser
