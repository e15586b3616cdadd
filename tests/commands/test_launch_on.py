"""`launch PRESET --on HOST` against a real sshd on 127.0.0.1, logged in as a non-root user
(tests/remote_user.py): the run starts there in its own session and survives the SSH
connection being cut, the console re-attaches over SSH and its stop sequence runs there,
the registry holds the run with its host, and paths and host names stay literal."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from fontaine_tui.core.runs.registry import Registry
from tests.remote_user import ALIAS, USER

pytestmark = [pytest.mark.ssh, pytest.mark.engine, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 300


def cli(tmp_path: Path, *argv: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "PYTHONUNBUFFERED": "1"}
    env.pop("FONTAINE_NOTIFY", None)
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def long_smoke(folder: Path) -> Path:
    """The smoke preset, 4000 steps: still running when the test stops it."""
    folder.mkdir(parents=True, exist_ok=True)
    text = (ROOT / "presets" / "smoke.toml").read_text()
    path = folder / "remote_smoke.toml"
    path.write_text(
        text.replace("\nsteps = 40\n", "\nsteps = 4000\n").replace(
            'name = "smoke"', 'name = "remote_smoke"'
        )
    )
    return path


def log_step(log: Path) -> int:
    from fontaine_tui.core.log.read import load_log

    return load_log(log).last_step if log.exists() else 0


def wait_for(pred, what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_launch_on_a_host_cut_reattach_and_stop(remote, remote_cache, sshd, tmp_path, monkeypatch):
    project = remote.home / "my project $(touch PWNED)"  # literal, never run
    if project.exists():
        shutil.rmtree(project)
    long_smoke(project / "presets")
    shutil.chown(project, USER)
    shutil.chown(project / "presets", USER)
    state = remote.home / "state"
    config = tmp_path / "config" / "fontaine-tui" / "config.toml"
    config.parent.mkdir(parents=True)
    env = {
        "FONTAINE_REGISTRY": str(state / "babysit.toml"),
        "XDG_CACHE_HOME": str(remote_cache),  # the corpus already built there
        "XDG_CONFIG_HOME": str(remote.home),
    }
    config.write_text(
        f"[hosts.{ALIAS}]\nproject = {json.dumps(str(project))}\n"
        f"python = {json.dumps(str(remote.python))}\n"
        "env = {" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + "}\n"
    )
    preset = long_smoke(tmp_path / "presets")
    res = cli(
        tmp_path,
        "launch",
        str(preset),
        "--on",
        ALIAS,
        "--detach",
        "--output-dir",
        "runs/a b; $(touch PWNED)",
        "--ssh-config",
        str(remote.config),
    )
    assert res.returncode == 0, res.stdout + res.stderr
    run_dir = project / "runs" / "a b; $(touch PWNED)"
    assert f"launched remote_smoke on {ALIAS}: engine pid " in res.stdout
    [entry] = Registry(tmp_path / "state" / "babysit.toml").entries()
    assert (entry.host, entry.run_dir, entry.status) == (ALIAS, str(run_dir), "running")
    engine = psutil.Process(entry.pid)
    try:
        assert engine.username() == USER  # it runs there, as the remote login
        # frozen on both sides, the same bytes and hash
        kept = [p for p in (tmp_path / "state" / "remote").rglob("prereg.json")]
        assert [p.read_bytes() for p in kept] == [(run_dir / "prereg.json").read_bytes()]
        assert json.loads(kept[0].read_text())["preset_sha256"] == entry.preset_sha256
        log = run_dir / "train_log.jsonl"
        wait_for(lambda: log_step(log) >= 2, "the remote engine trains")
        # a watcher over SSH (attach --plain, its own connection), then every SSH connection
        # cut: the engine, in its own session there, goes on, and the watcher reconnects
        target = f"{ALIAS}:{run_dir}"
        watcher = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fontaine_tui",
                "attach",
                target,
                "--plain",
                "--ssh-config",
                str(remote.config),
            ],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")},
        )
        try:
            seen = _lines_until(watcher, lambda ln: ln.startswith("step "), 120)
            assert sshd.cut() >= 1  # a live connection, the watcher's, was cut
            step = log_step(log)
            wait_for(lambda: log_step(log) > step + 2, "training after the cut", 120)
            assert engine.is_running() and engine.status() != psutil.STATUS_ZOMBIE
            after = _lines_until(
                watcher,
                lambda ln: ln.startswith("step ") and int(ln.split()[1].split("/")[0]) > step,
                120,
            )
            assert after and seen
        finally:
            watcher.kill()
            watcher.communicate()
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # [hosts.ALIAS]
        asyncio.run(_console_reattaches_and_stops(remote, run_dir, project))
        wait_for(
            lambda: not psutil.pid_exists(entry.pid) or engine.status() == psutil.STATUS_ZOMBIE,
            "the engine gone",
            60,
        )
        ends = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text().splitlines()]
        assert [(e["event"], e.get("cause")) for e in ends] == [
            ("begin", None),
            ("stop", None),  # the stop recorded before it was sent: no restart answers it
            ("end", "stopped"),
        ]
        [entry] = Registry(tmp_path / "state" / "babysit.toml").entries()
        assert entry.status == "stopped"  # the console's stop, recorded here
        # `fontaine-tui stop` of the remote run by its name: asked there over SSH (the run is
        # gone: only how it ended is read and said)
        res = cli(
            tmp_path, "stop", "remote_smoke", "--yes", "--json", "--ssh-config", str(remote.config)
        )
        assert res.returncode == 0, res.stdout + res.stderr
        assert json.loads(res.stdout.splitlines()[-1])["status"] == "stopped"
        runs = cli(tmp_path, "runs", "--ssh-config", str(remote.config))
        assert ALIAS in runs.stdout and "remote_smoke" in runs.stdout
    finally:
        # os.killpg, not /bin/kill: procps-ng 4.0.2's kill reads `-KILL -1381` as pid -1 (every
        # process), and only the remote login's engine is this test's to kill
        try:
            if entry.pid > 1 and psutil.Process(entry.pid).username() == USER:
                os.killpg(entry.pid, signal.SIGKILL)
        except (psutil.NoSuchProcess, ProcessLookupError):
            pass
    assert not list(remote.home.rglob("PWNED")) and not (tmp_path / "PWNED").exists()


def _lines_until(proc: subprocess.Popen, pred, timeout: float) -> list[str]:
    """Lines of `proc`'s output until one satisfies `pred` (AssertionError on time out)."""
    import selectors

    out: list[str] = []
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not sel.select(timeout=1.0):
            continue
        line = proc.stdout.readline()
        assert line, "the watcher ended: " + "".join(out[-5:])
        out.append(line)
        if pred(line):
            return out
    raise AssertionError("no such line: " + "".join(out[-5:]))


async def _console_reattaches_and_stops(remote, run_dir: Path, project) -> None:
    """The console as `attach HOST:PATH` opens it: the run's engine there found from the
    registry (commands/attach.launched_there), so quitting offers the stop over SSH."""
    from fontaine_tui.commands.attach import launched_there
    from fontaine_tui.console import make_app
    from fontaine_tui.core.follow.ssh import SshRun
    from fontaine_tui.core.preset.find import load_preset
    from fontaine_tui.core.ssh.destination import SshTarget
    from fontaine_tui.screens.dialogs import QuitDialog
    from tests.console.conftest import SIZE, until

    options = ("-F", str(remote.config))
    launched = launched_there(f"{ALIAS}:{run_dir}", options)
    assert launched is not None
    engine = launched.handle
    assert engine.settings.project == str(project)  # [hosts.ALIAS]
    engine.poll_s = 0.5
    source = SshRun(SshTarget(ALIAS, str(run_dir)), options)
    preset = load_preset(project / "presets" / "remote_smoke.toml")
    app = make_app(source=source, preset=preset, process=engine, kind="attach")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.session.store.last_step > 0, 60)
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, QuitDialog))
        await pilot.press("s")  # the stop sequence, run there
        await until(pilot, lambda: not app.is_running, 120)
    engine.close()
    info = launched.record_exit()  # what console.watch_remote does after the console
    assert info is not None and info.status == "stopped", info
    assert info.signal == "SIGINT" and info.checkpoint_step == info.last_step


def test_host_names_stay_literal(tmp_path: Path, monkeypatch, capsys) -> None:
    """The first host through a real `fontaine-tui` process, the others through the same
    entry point in this process (no start-up per host). A name ssh itself refuses is tried
    once (FONTAINE_SSH_CONNECT_S=0), not retried for 20 s: the point is that it stays
    literal."""
    from fontaine_tui.cli import main

    monkeypatch.setenv("FONTAINE_SSH_CONNECT_S", "0")
    res = cli(tmp_path, "launch", "smoke", "--on", "nohost;touch PWNED", timeout=60)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "Traceback" not in res.stderr
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)
    capsys.readouterr()
    for host in (
        "x$(touch PWNED)",
        "`touch PWNED`",
        "h;touch${IFS}PWNED",
        "h&&touch${IFS}PWNED",
        "h|touch${IFS}PWNED",
    ):
        code, err = main(["launch", "smoke", "--on", host]), capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        assert "Traceback" not in err
    for host in ("a b", "-oProxyCommand=touch PWNED"):
        code, err = main(["launch", "smoke", "--on", host]), capsys.readouterr().err
        assert code == 2 and "expected a host name or ssh alias" in err
    assert not list(tmp_path.rglob("PWNED")) and not Path("PWNED").exists()
