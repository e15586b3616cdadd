"""`fontaine-tui attach` / `replay` (--plain), attach targets, and the replay source."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.replay import ReplayRun
from fontaine_tui.core.follow.target import LocalFolder, parse_follow_target
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.ssh.destination import SshTarget
from fontaine_tui.core.verdict import prereg
from fontaine_tui.core.verdict.record import EXIT_CODES
from tests.logs import dumps, records, records_upto, write_log
from tests.sshd_helper import HOST_ALIAS, free_port, processes_mentioning

LOG = "train_log.jsonl"
ROOT = Path(__file__).resolve().parents[2]


def freeze(folder: Path, preset_name: str = "demosonly_1gpu") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    prereg.freeze(
        RunFolder(folder), load_preset(preset_name), ["python", "-m", "fontaine_engine"], "h"
    )


def cli(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=Path(__file__).parents[2],
    )


@pytest.mark.parametrize(
    "text, expected",
    [
        ("gpu1:/runs/a", SshTarget("gpu1", "/runs/a")),
        ("me@gpu1:/runs/a b", SshTarget("gpu1", "/runs/a b", "me")),
        ("me@10.0.0.2:runs/a", SshTarget("10.0.0.2", "runs/a", "me")),
        ("ssh://me@gpu1:2222/runs/a", SshTarget("gpu1", "/runs/a", "me", 2222)),
        ("ssh://gpu1/runs/a%20b", SshTarget("gpu1", "/runs/a b")),
        ("ssh://me@[::1]:22/r", SshTarget("::1", "/r", "me", 22)),
        ("gpu1:~/runs/a", SshTarget("gpu1", "runs/a")),
        ("ssh://gpu1/~/runs/a", SshTarget("gpu1", "runs/a")),
        ("./outputs/x", LocalFolder(Path("./outputs/x"))),
        ("/abs/x:y", LocalFolder(Path("/abs/x:y"))),
    ],
)
def test_parse_follow_target(text, expected):
    assert parse_follow_target(text) == expected


def test_parse_follow_target_prefers_an_existing_local_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "host:run").mkdir()
    assert parse_follow_target("host:run") == LocalFolder(Path("host:run"))
    with pytest.raises(InputError, match="bad port"):
        parse_follow_target("ssh://h:99999/x")
    with pytest.raises(InputError, match="expected ssh://"):
        parse_follow_target("ssh://h")


def test_replay_plain_prints_records_and_verdict_and_exits(tmp_path, capsys):
    log = write_log(tmp_path / "run" / LOG)
    # the verdict's code, as `verdict` exits: the fixture reads AMBIGUOUS, final
    assert (
        main(["replay", str(log), "--preset", "demosonly_1gpu", "--plain"])
        == EXIT_CODES["AMBIGUOUS"]
    )
    out = capsys.readouterr().out.splitlines()
    probes = [ln for ln in out if ln.startswith("probe step")]
    verdicts = [ln for ln in out if ln.startswith("verdict: ")]
    assert [p.split(":")[0] for p in probes] == [f"probe step {s}" for s in (250, 500, 750, 1000)]
    assert len(verdicts) == 4
    assert verdicts[-1].startswith("verdict: AMBIGUOUS (final, step 1000 of 1000, delta +0.6929")
    assert verdicts[0].startswith("verdict: UNDECIDABLE")
    assert sum(ln.startswith("step ") for ln in out) == 1000
    assert out[-1] == "-- end of replay (train_log.jsonl)"


def test_replay_without_a_preset_is_one_line_exit_2(tmp_path):
    log = write_log(tmp_path / "run" / LOG)
    res = cli("replay", str(log), "--plain")
    assert res.returncode == 2
    assert (
        res.stderr.count("\n") == 1 and "--preset" in res.stderr and "Traceback" not in res.stderr
    )
    res = cli("replay", str(tmp_path / "nope.jsonl"), "--preset", "smoke", "--plain")
    assert res.returncode == 2 and res.stderr.count("\n") == 1


async def test_replay_speed_follows_the_log_clock(tmp_path):
    recs = [{"kind": "train", "step": s, "time": 1000.0 + s * 0.1} for s in range(21)]
    log = tmp_path / LOG
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    src = ReplayRun(log, speed=10)  # 2 s of log time in 0.2 s
    t0 = time.perf_counter()
    lines, arrivals = [], []
    async for batch in src.follow():
        lines += batch.lines
        arrivals.append(time.perf_counter() - t0)
    elapsed = time.perf_counter() - t0
    assert len(lines) == 21
    assert 0.18 <= elapsed < 1.5
    assert len(arrivals) > 10  # paced, not one burst
    fast = ReplayRun(log)
    t0 = time.perf_counter()
    n = [len(b.lines) async for b in fast.follow()]
    assert sum(n) == 21 and time.perf_counter() - t0 < 0.15


def test_attach_plain_local_follows_a_growing_run_until_end(tmp_path):
    run = tmp_path / "run"
    freeze(run)
    recs = records()
    lines = [dumps(r) + "\n" for r in recs]
    (run / LOG).write_text("".join(lines[:300]))

    def writer():
        time.sleep(1.0)
        with open(run / LOG, "a") as f:
            for i, line in enumerate(lines[300:]):
                f.write(line)
                f.flush()
                if i % 200 == 0:
                    time.sleep(0.05)

    t = threading.Thread(target=writer)
    t.start()
    res = cli("attach", str(run), "--plain", "--until-end")
    t.join()
    assert res.returncode == EXIT_CODES["AMBIGUOUS"], res.stderr  # the verdict's code
    # the fixture's clock is months old: attached live, its quiet reads as a stall
    said = ("INFO ", "WARN ", "ALERT ", "CLEAR ")
    out = [ln for ln in res.stdout.splitlines() if not ln.startswith(said)]
    steps = [int(ln.split()[1].split("/")[0]) for ln in out if ln.startswith("step ")]
    assert steps == list(range(1, 1001))
    # the run's end, then why the report ended and the verdict its exit code says
    assert out[-3].startswith("event end at step 1000")
    assert out[-2] == "ended: the run's end event at step 1000: finished"
    assert out[-1].startswith("verdict: AMBIGUOUS (final, step 1000 of 1000")
    probe = out.index(next(ln for ln in out if ln.startswith("probe step 1000: ")))
    assert out[probe].startswith("probe step 1000: eval_chunk_mae 3.7929")
    assert out[probe + 1].startswith("verdict: AMBIGUOUS (final, step 1000 of 1000")


def test_attach_bad_targets_are_one_line_exit_2(tmp_path):
    res = cli("attach", str(tmp_path / "missing"), "--plain")
    assert res.returncode == 2 and "no such run folder" in res.stderr
    assert res.stderr.count("\n") == 1
    (tmp_path / "bare").mkdir()
    res = cli("attach", str(tmp_path / "bare"), "--plain")
    assert res.returncode == 2 and "no prereg.json" in res.stderr and "--preset" in res.stderr
    assert res.stderr.count("\n") == 1


@pytest.mark.ssh
def test_attach_plain_over_ssh(sshd, tmp_path):
    run = tmp_path / "remote run"
    freeze(run)
    write_log(run / LOG)
    res = cli(
        "attach", f"{HOST_ALIAS}:{run}", "--ssh-config", str(sshd.config), "--plain", "--until-end"
    )
    assert res.returncode == EXIT_CODES["AMBIGUOUS"], res.stderr  # the verdict's code
    assert f"following ssh {HOST_ALIAS}:{run}" in res.stdout
    assert "verdict: AMBIGUOUS (final, step 1000 of 1000" in res.stdout
    steps = [ln for ln in res.stdout.splitlines() if ln.startswith("step ")]
    assert len(steps) == 1000
    # attach closed its master connection on the way out (close() runs `ssh -O exit`)
    assert not processes_mentioning(str(sshd.config), exe="ssh")


@pytest.mark.ssh
def test_attach_ssh_errors_are_one_line_exit_2(sshd, tmp_path, monkeypatch):
    monkeypatch.setenv("FONTAINE_SSH_CONNECT_S", "0")  # a refused port: said at once
    res = cli(
        "attach", f"{HOST_ALIAS}:{tmp_path}/nope", "--ssh-config", str(sshd.config), "--plain"
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "no such run folder; try by hand: ssh -F" in res.stderr
    cfg = tmp_path / "down_config"
    cfg.write_text(sshd.config.read_text().replace(f"Port {sshd.port}", f"Port {free_port()}"))
    res = cli("attach", f"{HOST_ALIAS}:{tmp_path}", "--ssh-config", str(cfg), "--plain")
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "host unreachable" in res.stderr and "try by hand: ssh -F" in res.stderr


def test_replay_source_ends_and_reads_neighbours(tmp_path):
    log = write_log(tmp_path / LOG)
    (tmp_path / "engine.out.log").write_bytes(b"a\nb\n")

    async def go():
        src = ReplayRun(log)
        tail = [b async for b in src.follow("engine.out.log")]
        assert await src.read_bytes("prereg.json") is None
        return tail

    tail = asyncio.run(go())
    assert tail[0].lines == [b"a", b"b"]


async def test_the_console_follows_a_growing_local_run(tmp_path):
    """attach without --plain: the app's follow workers drive a LocalRun (no terminal needed)."""
    from fontaine_tui.console import make_app
    from fontaine_tui.core.follow.local import LocalRun

    run = tmp_path / "run"
    recs = records()
    lines = [dumps(r) + "\n" for r in recs]
    first_part = max(r["step"] for r in recs[:100])
    write_log(run / LOG, [])
    (run / LOG).write_text("".join(lines[:100]))
    app = make_app(source=LocalRun(run), preset=load_preset("demosonly_1gpu"), kind="attach")
    async with app.run_test(size=(120, 40)) as pilot:
        session = app.session

        async def until(pred):
            for _ in range(400):
                if pred():
                    return
                await pilot.pause(0.025)
            raise AssertionError(f"last step {session.store.last_step}")

        await until(lambda: session.store.last_step == first_part)
        with open(run / LOG, "a") as f:
            f.write("".join(lines[100:]))
        await until(lambda: session.store.last_step == 1000 and 1000 in session.store.probes)
        await pilot.press("q")


def test_plain_replay_and_attach_refuse_a_preset_that_loosens_the_frozen_bounds(tmp_path, capsys):
    from tests.core.launch.conftest import preset_variant
    from tests.logs import RIGONLY_LIKE

    run = tmp_path / "run"
    freeze(run)
    write_log(run / LOG, probes=RIGONLY_LIKE)
    loose = preset_variant(tmp_path, "demosonly_1gpu", name="loose", healthy_max="0.7")
    for argv in (["replay", str(run / LOG)], ["attach", str(run), "--until-end"]):
        assert main([*argv, "--preset", str(loose), "--plain"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "verdict.healthy_max: frozen 0.3, given 0.7" in err[0], err
        # without --preset the frozen bounds read it: not HEALTHY
        assert main([*argv, "--plain"]) == EXIT_CODES["AMBIGUOUS"]
        last = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("verdict: ")]
        assert last and not last[-1].startswith("verdict: HEALTHY"), last[-1:]


@pytest.mark.parametrize(
    "target",
    [
        "ssh://-oProxyCommand=touch%20pwned/run",
        "ssh://-oProxyCommand=x@host/run",
        "-oProxyCommand=touch pwned:/run",
        "me@-oProxyCommand=touch:/run",
    ],
)
def test_a_host_or_user_beginning_with_a_dash_is_refused(tmp_path, monkeypatch, target):
    monkeypatch.chdir(tmp_path)
    res = cli("attach", target, "--plain", timeout=30)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "may not begin with '-'" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "pwned").exists()


def test_ssh_is_called_with_the_destination_after_a_double_dash():
    from fontaine_tui.core.follow.ssh import SshRun

    run = SshRun(SshTarget("gpu1", "/runs/a", "me"))
    argv = run.argv("true")
    assert argv[-3:] == ["--", "me@gpu1", "true"]
    assert SshTarget("gpu1", "/r").hand_command().endswith("-- gpu1 'ls -la /r'")


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("amendments.jsonl", '{"garbage": 1}\n', "amendments from line 1 on are not applied"),
        ("review.jsonl", '{"x": 1}\n', "the review trail does not hold"),
    ],
)
def test_a_chain_that_does_not_hold_ends_the_plain_report_as_verdict_does(
    tmp_path, capsys, name, text, said
):
    """`verdict` refuses a broken ledger or review trail (exit 2, naming it); replay --plain
    and attach --plain --until-end read the run, then end the same way, not with a label's
    code."""
    run = tmp_path / "run"
    freeze(run)
    write_log(run / LOG)
    (run / name).write_text(text)
    assert main(["verdict", str(run)]) == 2
    capsys.readouterr()
    for argv in (["replay", str(run), "--plain"], ["attach", str(run), "--plain", "--until-end"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and said in err[0] and name.split(".")[0] in err[0], err


@pytest.mark.parametrize("blind", [False, True])
def test_a_broken_review_trail_ends_the_plain_report_in_verdicts_words(tmp_path, capsys, blind):
    """The refusal's line is `verdict`'s word for word (core/run/evidence.py's
    trail_refusal): after a read it shows, that the read above is the evidence's; after a
    blinded one (a run short of its endpoint, replayed), no more."""
    text = (ROOT / "presets" / "demosonly_1gpu.toml").read_text()
    if blind:
        text = text.replace("[verdict]\n", "[verdict]\nblind = true\n", 1)
    (tmp_path / "p.toml").write_text(text)
    run = tmp_path / "run"
    freeze(run, str(tmp_path / "p.toml"))
    write_log(run / LOG, records_upto(750) if blind else None)
    (run / "review.jsonl").write_text('{"x": 1}\n')
    assert main(["verdict", str(run)]) == 2
    [said] = capsys.readouterr().err.strip().splitlines()
    assert ("the verdict above is the evidence's" in said) is not blind, said
    argvs = [["replay", str(run), "--plain"]]
    if not blind:  # a run that ended: attach reads it to its end
        argvs.append(["attach", str(run), "--plain", "--until-end"])
    for argv in argvs:
        assert main(argv) == 2, argv
        assert capsys.readouterr().err.strip().splitlines() == [said], argv


def test_a_broken_ledger_ends_the_plain_report_in_verdicts_words(tmp_path, capsys):
    """The refusal's line is `verdict`'s word for word (core/run/evidence.py's
    ledger_refusal): the ledger's file and the line where its chain breaks, here a line of a
    ledger `amend` wrote, edited by hand."""
    from fontaine_tui.core.verdict.ledger import declare_amendment

    run = tmp_path / "run"
    freeze(run)
    write_log(run / LOG)
    folder = RunFolder(run)
    preset = load_preset("demosonly_1gpu")
    declare_amendment(folder, factor=2.0, last_step_seen=5, preset=preset)
    declare_amendment(folder, factor=3.0, last_step_seen=6, preset=preset)
    lines = folder.amendments.read_bytes().splitlines(keepends=True)
    folder.amendments.write_bytes(lines[0] + lines[1].replace(b'"factor":3.0', b'"factor":1.0'))
    assert main(["verdict", str(run)]) == 2
    [said] = capsys.readouterr().err.strip().splitlines()
    assert f"{folder.amendments}:2: its content does not match its hash (edited)" in said, said
    for argv in (["replay", str(run), "--plain"], ["attach", str(run), "--plain", "--until-end"]):
        assert main(argv) == 2, argv
        assert capsys.readouterr().err.strip().splitlines() == [said], argv
