"""`fontaine-tui runs` over a fleet: a run here, one on a real sshd, and one on a host that
goes down (a socket that accepts and never answers): the table is complete within 2 s, the
down host's rows are its last good reading, marked with their age."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.verdict import prereg
from fontaine_tui.core.verdict.record import EXIT_CODES
from tests.core.notify.server import Silent
from tests.logs import records_upto, write_log
from tests.sshd_helper import HOST_ALIAS

pytestmark = pytest.mark.ssh
FLAKY = "fontaine-flaky"


def run_folder(root: Path, upto: int) -> Path:
    root.mkdir(parents=True)
    prereg.freeze(RunFolder(root), load_preset("demosonly_1gpu"), ["python"], "h")
    write_log(root / "train_log.jsonl", records_upto(upto))
    return root


def runs(tmp_path: Path, config: Path) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "runs", "--ssh-config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ},
    )
    return res, time.monotonic() - t0


def test_a_down_host_degrades_its_rows_not_the_table(sshd, tmp_path, registry_path):
    here = run_folder(tmp_path / "here run", 1000)
    there = run_folder(tmp_path / "there run", 600)
    flaky = run_folder(tmp_path / "flaky run", 300)
    reg = Registry(registry_path)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        for name, folder, host, pid in (
            ("done", here, hostname(), 0),
            ("live", there, HOST_ALIAS, sleeper.pid),
            ("flaky", flaky, FLAKY, 0),
        ):
            reg.upsert(
                Entry(name=name, run_dir=str(folder), host=host, pid=pid, preset="demosonly_1gpu")
            )
        config = tmp_path / "ssh_config"
        base = sshd.config.read_text()
        flaky_host = base.replace(f"Host {HOST_ALIAS}\n", f"Host {FLAKY}\n")
        config.write_text(base + flaky_host)
        res, wall = runs(tmp_path, config)
        assert res.returncode == 0, res.stderr
        lines = {ln.split()[0]: ln for ln in res.stdout.splitlines()[1:] if ln.strip()}
        assert " finished " in lines["done"] and "1000/1000" in lines["done"]
        assert "AMBIGUOUS" in lines["done"] and "1000:3.7929" in lines["done"]
        assert " running " in lines["live"] and "600/1000" in lines["live"]
        assert "PROVISIONAL" in lines["live"] and "500:3.1000" in lines["live"]
        assert "300/1000" in lines["flaky"] and lines["flaky"].split()[-2] != "(down)"
        # the flaky host goes down: it accepts the connection and never answers
        silent = Silent()
        try:
            config.write_text(base + flaky_host.replace(f"Port {sshd.port}", f"Port {silent.port}"))
            time.sleep(1.0)  # so the last good reading has an age
            res, wall = runs(tmp_path, config)
        finally:
            silent.close()
        assert res.returncode == 0, res.stderr
        assert wall <= 2.0, wall  # the whole command, Python's start-up included
        lines = {ln.split()[0]: ln for ln in res.stdout.splitlines()[1:] if ln.strip()}
        assert "300/1000" in lines["flaky"] and "s ago (down)" in lines["flaky"]
        assert " running " in lines["live"] and "now" in lines["live"]
        assert f"{FLAKY}: " in res.stdout and "its rows are its last good reading" in res.stdout
        print(f"runs with {FLAKY} down: {wall:.2f} s")  # docs/performance.md's figure (-s)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_attach_registers_what_it_attaches_to(sshd, tmp_path, registry_path):
    folder = run_folder(tmp_path / "run over ssh", 1000)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "fontaine_tui",
            "attach",
            f"{HOST_ALIAS}:{folder}",
            "--plain",
            "--until-end",
            "--ssh-config",
            str(sshd.config),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == EXIT_CODES["AMBIGUOUS"], res.stderr  # the verdict's code
    [entry] = Registry(registry_path).entries()
    assert (entry.host, entry.run_dir, entry.status) == (HOST_ALIAS, str(folder), "attached")
    assert entry.name == "grasp_sft_v2_demosonly_1gpu_disc"
    # a second attach leaves the entry as it is
    subprocess.run(
        [
            sys.executable,
            "-m",
            "fontaine_tui",
            "attach",
            f"{HOST_ALIAS}:{folder}",
            "--plain",
            "--until-end",
            "--ssh-config",
            str(sshd.config),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert Registry(registry_path).entries() == [entry]


def test_attach_by_uri_registers_the_port_and_runs_reaches_it(sshd, tmp_path, registry_path):
    """ssh://user@host:PORT/path: the registry keeps the port (as the URI ssh takes), so
    `runs` looks at the run on that port; `stop` of a run only attached there refuses."""
    folder = run_folder(tmp_path / "run on a port", 1000)
    config = tmp_path / "ssh_config"  # this host by its address, the port from the URI only
    config.write_text(
        sshd.config.read_text()
        .replace(f"Host {HOST_ALIAS}\n", "Host 127.0.0.1\n")
        .replace(f"  Port {sshd.port}\n", "")
    )
    uri = f"ssh://{sshd.user}@127.0.0.1:{sshd.port}{folder}"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "fontaine_tui",
            "attach",
            uri,
            "--plain",
            "--until-end",
            "--ssh-config",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == EXIT_CODES["AMBIGUOUS"], res.stderr  # the verdict's code
    [entry] = Registry(registry_path).entries()
    assert (entry.host, entry.run_dir) == (f"ssh://{sshd.user}@127.0.0.1:{sshd.port}", str(folder))
    res, _ = runs(tmp_path, config)
    assert res.returncode == 0, res.stderr
    [line] = [ln for ln in res.stdout.splitlines()[1:] if ln.startswith(entry.name)]
    assert "1000/1000" in line and "(down)" not in line, res.stdout
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "stop", entry.name, "--yes"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "attached, not launched from here" in res.stderr
