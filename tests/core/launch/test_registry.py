"""The babysit registry: concurrent writers (real processes), live status, bad files."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from fontaine_tui import cli
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.runs.registry import Entry, Registry, default_path, live_status

WRITER = """
import sys
from fontaine_tui.core.runs.registry import Entry, Registry
path, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
reg = Registry(path)
for i in range(n):
    reg.upsert(Entry(name=f"{who}-{i}", run_dir=f"/runs/{who}/{i}", host="h", pid=i,
                     last_step=i, launched_at="2026-01-01T00:00:00.000000Z"))
    reg.update(f"/runs/{who}/{i}", "h", status="finished", exit_code=0)
"""


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "reg" / "babysit.toml"
    writers, each = 4, 12
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{k}", str(each)])
        for k in range(writers)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0] * writers
    entries = Registry(path).entries()
    assert len(entries) == writers * each
    assert {e.name for e in entries} == {f"w{k}-{i}" for k in range(writers) for i in range(each)}
    assert all(e.status == "finished" and e.exit_code == 0 for e in entries)
    assert sorted(p.name for p in path.parent.iterdir()) == ["babysit.toml", "babysit.toml.lock"]


def test_upsert_replaces_by_host_and_folder(tmp_path: Path) -> None:
    reg = Registry(tmp_path / "r.toml")
    reg.upsert(Entry("a", "/x", "h1", pid=1))
    reg.upsert(Entry("a", "/x", "h2", pid=2))
    reg.upsert(Entry("a2", "/x", "h1", pid=3, exit_code=None))
    assert [(e.name, e.host, e.pid) for e in reg.entries()] == [("a", "h2", 2), ("a2", "h1", 3)]
    assert "exit_code" not in (tmp_path / "r.toml").read_text()  # None is absent in TOML
    assert reg.update("/nope", "h1", status="killed") is None


def test_default_path_honours_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FONTAINE_REGISTRY", str(tmp_path / "f.toml"))
    assert default_path() == tmp_path / "f.toml"
    monkeypatch.delenv("FONTAINE_REGISTRY")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert default_path() == tmp_path / "state" / "fontaine-tui" / "babysit.toml"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert (
        default_path() == tmp_path / "home" / ".local" / "state" / "fontaine-tui" / "babysit.toml"
    )


def test_a_broken_registry_is_an_input_error_and_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text("[[runs]\nname = 'x'")
    reg = Registry(path)
    with pytest.raises(InputError, match="not valid TOML"):
        reg.entries()
    with pytest.raises(InputError):
        reg.upsert(Entry("a", "/x", "h"))
    assert path.read_text() == "[[runs]\nname = 'x'"
    path.write_text("[[runs]]\nname = 'x'\n")
    with pytest.raises(InputError, match=r"runs\[0\]"):
        reg.entries()


def test_live_status_checks_the_pid_and_reads_the_log(tmp_path: Path) -> None:
    import psutil

    run = tmp_path / "run"
    run.mkdir()
    (run / "train_log.jsonl").write_text(
        '{"kind":"train","step":7,"time":1.0,"loss":1}\n'
        '{"kind":"checkpoint","step":5,"time":1.0,"path":"c"}\n'
    )
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = psutil.Process(sleeper.pid).create_time()
        e = Entry("r", str(run), "here", pid=sleeper.pid, pid_started=started)
        s = live_status(e, "here")
        assert (s.state, s.last_step) == ("running", 7)
        # the same pid with another start time is another process: the run is gone
        s = live_status(
            Entry("r", str(run), "here", pid=sleeper.pid, pid_started=started - 100), "here"
        )
        assert s.state == "exited" and "not started by this console" in s.detail
    finally:
        sleeper.kill()
        sleeper.wait()
    s = live_status(e, "here")
    assert s.state == "exited" and s.last_step == 7 and "last checkpoint step 5" in s.detail
    assert live_status(e, "elsewhere").state == "remote"


def test_runs_command_lists_and_records_exits(
    tmp_path: Path, registry_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fontaine_tui.core.host.memory import hostname

    assert cli.main(["runs"]) == 0
    assert "no runs in" in capsys.readouterr().out
    run = tmp_path / "run"
    run.mkdir()
    (run / "train_log.jsonl").write_text(
        '{"kind":"train","step":12,"time":1.0,"loss":1}\n'
        '{"kind":"event","step":12,"time":2.0,"event":"end","detail":"stopped by SIGINT at step 12"}\n'
    )
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    Registry().upsert(
        Entry(
            "myrun",
            str(run),
            hostname(),
            pid=dead.pid,
            pid_started=time.time(),
            launched_at="2026-12-01T10:00:00.000000Z",
        )
    )
    assert cli.main(["runs", "--update"]) == 0
    out = capsys.readouterr().out
    assert "myrun" in out and "stopped" in out and "12" in out
    assert "1 exit(s) recorded" in out
    [e] = Registry().entries()
    assert (e.status, e.last_step) == ("stopped", 12)


def test_live_statuses_answer_within_the_deadline(tmp_path: Path, monkeypatch) -> None:
    """A run whose look hangs (a Slurm scheduler not answering) is left out at the deadline;
    the others are there, looked at side by side."""

    from fontaine_tui.core.runs import registry as reg_mod

    def look(entry, host):
        if entry.name == "stuck":
            time.sleep(3)
        return reg_mod.LiveStatus(entry, "running", 1, "")

    monkeypatch.setattr(reg_mod, "live_status", look)
    entries = [Entry(name=n, run_dir=str(tmp_path / n), host="h") for n in ("a", "stuck", "b")]
    entries.append(Entry(name="far", run_dir="/x", host="other"))
    t0 = time.monotonic()
    got = reg_mod.live_statuses(entries, "h", 0.5)
    assert time.monotonic() - t0 < 1.5
    assert sorted(k[1] for k in got) == [str(tmp_path / "a"), str(tmp_path / "b")]


def test_a_write_keeps_the_users_comments_and_unknown_keys(tmp_path: Path) -> None:
    path = tmp_path / "babysit.toml"
    path.write_text(
        "# my runs, see the wiki\n\n[[runs]]\n# the baseline: do not remove\n"
        'name = "base"\nrun_dir = "/runs/base"\nhost = "h"\n'
        'owner = "ana"  # who to ask\n\n'
        '[[runs]]\nname = "old"\nrun_dir = "/runs/old"\nhost = "h"\n'
    )
    reg = Registry(path)
    reg.upsert(Entry("new", "/runs/new", "h", pid=7, last_step=3))
    reg.update("/runs/base", "h", status="finished", exit_code=0)
    reg.change(lambda entries: [e for e in entries if e.name != "old"])
    text = path.read_text()
    for kept in (
        "# my runs, see the wiki",
        "# the baseline: do not remove",
        'owner = "ana"  # who to ask',
    ):
        assert kept in text
    assert [(e.name, e.status, e.exit_code) for e in reg.entries()] == [
        ("base", "finished", 0),
        ("new", "running", None),
    ]
    assert "/runs/old" not in text


def test_a_registry_written_as_inline_tables_is_updated(tmp_path) -> None:
    from fontaine_tui.core.runs.registry import Registry

    path = tmp_path / "babysit.toml"
    path.write_text(
        'runs = [ { name = "r", run_dir = "/x/r", host = "h", pid = 5, '
        'pid_started = 5.0, status = "running", mine = 1 } ]  # kept as written\n'
    )
    reg = Registry(path)
    [entry] = reg.entries()
    reg.change(lambda entries: [replace(e, status="finished") for e in entries])
    [after] = Registry(path).entries()
    assert after.status == "finished" and after.name == "r"
    assert "mine = 1" in path.read_text()  # a key fontaine-tui does not know stays


def test_an_entry_keeps_its_target_kind_and_an_old_one_reads_without(tmp_path: Path) -> None:
    path = tmp_path / "babysit.toml"
    path.write_text(  # written before kinds were recorded
        '[[runs]]\nname = "old"\nrun_dir = "/runs/old"\nhost = "h"\njob = "17"\n'
    )
    reg = Registry(path)
    reg.upsert(Entry("new", "/runs/new", "h", job="18", target="slurm"))
    again = {e.name: e for e in Registry(path).entries()}
    assert (again["old"].target, again["old"].job) == ("", "17")
    assert again["new"].target == "slurm"
    assert 'target = "slurm"' in path.read_text()
    with pytest.raises(InputError, match=r"runs\[0\]\.target: expected a string"):
        path.write_text('[[runs]]\nname = "x"\nrun_dir = "/x"\nhost = "h"\ntarget = 3\n')
        Registry(path).entries()
