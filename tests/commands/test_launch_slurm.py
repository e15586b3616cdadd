"""`launch PRESET --on slurm:PARTITION` against a real single-node Slurm cluster (munged,
slurmctld and slurmd started under the test's folder: tests/slurm_helper.py): the run is
submitted as a batch job, trains on the node, shows in `runs`, stops through scancel with a
checkpoint, finishes with its verdict under --plain; a refused submission leaves no launched
run behind; a job held in the queue is cancelled. The script's rendering, the settings'
checks and the scheduler's ends are tested pure."""

from __future__ import annotations

import importlib.util
import json
import os
import pwd
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.history import read_history
from fontaine_tui.core.run.attempts import read_attempts
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Registry
from fontaine_tui.core.slurm import client as slurm_client
from fontaine_tui.core.slurm import job as slurm_job
from fontaine_tui.core.slurm import submit as slurm
from fontaine_tui.model.launched import LaunchedRun
from tests.commands.test_launch_on import long_smoke
from tests.logs import T0, meta, train, write_log
from tests.remote_user import ALIAS, USER
from tests.slurm_helper import PARTITION, SlurmCluster, SlurmError, missing_tools

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 300
ODD = "run a; $(touch PWNED) `touch PWNED`"  # a literal folder name, never run


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if missing := missing_tools():
        pytest.skip(
            f"Slurm is not installed here ({', '.join(missing)}; apt-get install "
            "slurmctld slurmd slurm-client munge)"
        )
    if os.geteuid() != 0:
        pytest.skip("slurmd runs jobs as their user only when started as root")
    if importlib.util.find_spec("torch") is None:
        pytest.skip("the engine needs torch")
    # under /tmp, open to other users (the SSH test's login submits as itself): our folder,
    # removed at the end
    root = Path(tempfile.mkdtemp(prefix="fontaine-slurm-", dir="/tmp"))
    root.chmod(0o755)
    try:
        c = SlurmCluster(root / "c").start()
    except SlurmError as exc:  # the daemons would not run here: said, with their logs
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"a single-node Slurm cluster did not start here: {exc}")
    yield c
    c.stop()
    shutil.rmtree(root, ignore_errors=True)


def cli(
    cluster, tmp_path: Path, *argv: str, config: str = "", timeout: float = TIMEOUT
) -> subprocess.CompletedProcess:
    conf = tmp_path / "config" / "fontaine-tui" / "config.toml"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(config)
    env = cluster.env(
        {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "PYTHONUNBUFFERED": "1"}
    )
    env.pop("FONTAINE_NOTIFY", None)
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def log_step(folder: RunFolder) -> int:
    from fontaine_tui.core.log.read import load_log

    return load_log(folder.log).last_step if folder.log.exists() else 0


def wait_for(pred, what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


@pytest.mark.engine
@pytest.mark.slow
def test_submitted_run_trains_shows_in_runs_and_stops_with_a_checkpoint(
    cluster, tmp_path: Path, registry_path: Path
) -> None:
    preset = long_smoke(tmp_path / "presets")
    preset.write_text(preset.read_text() + '\n[slurm]\ntime = "45"\n')  # over config's 30
    res = cli(
        cluster,
        tmp_path,
        "launch",
        str(preset),
        "--on",
        f"slurm:{PARTITION}",
        "--detach",
        "--output-dir",
        ODD,
        config='[slurm]\ntime = "30"\nqos = "normal"\n',
    )
    assert res.returncode == 0, res.stdout + res.stderr
    [entry] = Registry(registry_path).entries()
    folder = RunFolder(tmp_path / ODD)
    assert (entry.run_dir, entry.pid, entry.status) == (str(folder.root), 0, "running")
    assert entry.job.isdigit() and f"as slurm job {entry.job} (partition {PARTITION})" in res.stdout
    job = cluster.show_job(entry.job)
    assert job["Partition"] == PARTITION and job["TimeLimit"] == "00:45:00"
    script = (folder.root / "job.sbatch").read_text()
    assert "#SBATCH --time=45\n#SBATCH --qos=normal\n" in script
    assert "'" + str(folder.root) + "'" in script
    prereg = json.loads(folder.prereg.read_text())
    assert prereg["provenance"]["slurm"]["partition"] == PARTITION
    assert prereg["preset"]["slurm"] == {"time": "45"}  # frozen with the experiment
    wait_for(lambda: log_step(folder) >= 2, "the job trains on the node")
    runs = cli(cluster, tmp_path, "runs")
    [row] = [ln for ln in runs.stdout.splitlines() if "remote_smoke" in ln]
    assert " running " in row, runs.stdout
    stop = cli(cluster, tmp_path, "stop", str(folder.root), "--yes", "--json")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert f"stopping slurm job {entry.job}" in stop.stderr
    info = json.loads(stop.stdout.splitlines()[-1])
    assert (info["status"], info["sent"]) == ("stopped", "SIGINT"), info
    assert info["checkpoint_step"] == info["last_step"] > 0  # the engine checkpointed on SIGINT
    [attempt] = read_attempts(folder)
    assert (attempt.job, attempt.pid, attempt.cause) == (entry.job, 0, "stopped")
    [after] = Registry(registry_path).entries()
    assert after.status == "stopped"
    assert cluster.show_job(entry.job)["JobState"] in ("CANCELLED", "COMPLETED", "FAILED")
    assert not list(tmp_path.rglob("PWNED")) and not (ROOT / "PWNED").exists()


@pytest.mark.engine
@pytest.mark.slow
def test_the_console_follows_the_job_and_its_quit_dialog_stops_it(
    cluster, tmp_path: Path, registry_path: Path, monkeypatch
) -> None:
    import asyncio

    preset = long_smoke(tmp_path / "presets")
    monkeypatch.setenv("FONTAINE_TELEMETRY_S", "0.3")  # the node's recorder samples often
    res = cli(
        cluster,
        tmp_path,
        "launch",
        str(preset),
        "--on",
        f"slurm:{PARTITION}",
        "--detach",
        "--output-dir",
        "run",
    )
    assert res.returncode == 0, res.stdout + res.stderr
    [entry] = Registry(registry_path).entries()
    folder = RunFolder(tmp_path / "run")
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))  # this process asks the scheduler
    asyncio.run(_console_stops(folder, entry.job, preset, cluster.hostname))
    [attempt] = read_attempts(folder)
    assert attempt.cause == "running"  # the console stopped it; `stop` records the end
    assert cluster.show_job(entry.job)["JobState"] in ("CANCELLED", "COMPLETED", "FAILED")


async def _console_stops(folder: RunFolder, job: str, preset_path: Path, node: str) -> None:
    from fontaine_tui.console import make_app
    from fontaine_tui.core.follow.local import LocalRun
    from fontaine_tui.core.launch.targets import slurm as slurm_target
    from fontaine_tui.core.preset.find import load_preset
    from fontaine_tui.screens.dialogs import QuitDialog
    from fontaine_tui.widgets.telemetry_panel import TelemetryPanel
    from tests.console.conftest import SIZE, text, until

    [attempt] = read_attempts(folder)
    engine = slurm_target.reopen(folder, attempt)  # the attempt's job, judged from its own start
    assert isinstance(engine, slurm_job.SlurmJob) and engine.job == job
    app = make_app(
        source=LocalRun(folder.root), preset=load_preset(preset_path), process=engine, kind="launch"
    )
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.session.store.last_step > 1, 120)
        assert engine.poll() is None and engine.last is not None
        assert engine.last.state == "RUNNING"
        panel = app.screen.query_one(TelemetryPanel)  # the node's history, by its name
        await until(pilot, lambda: f"{node} · " in text(panel) and "engine mem" in text(panel), 60)
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, QuitDialog))
        assert f"slurm job {job}" in app.screen.what
        await pilot.press("s")  # scancel --full --signal=INT: the engine checkpoints
        await until(pilot, lambda: not app.is_running, 120)
    info = engine.poll()
    assert info is not None and (info.status, info.sent) == ("stopped", "SIGINT"), info
    assert info.checkpoint_step == info.last_step > 1


@pytest.mark.engine
@pytest.mark.slow
def test_plain_follows_the_job_to_its_verdict(
    cluster, tmp_path: Path, registry_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FONTAINE_TELEMETRY_S", "0.3")  # the node's recorder samples often
    res = cli(
        cluster,
        tmp_path,
        "launch",
        "smoke",
        "--on",
        f"slurm:{PARTITION}",
        "--plain",
        "--poll",
        "0.5",
        "--output-dir",
        "run",
    )
    out = res.stdout + res.stderr
    assert res.returncode in (0, 1) and "Traceback" not in out, out
    folder = RunFolder(tmp_path / "run")
    assert "engine finished at step 40" in out and "verdict.json written" in out, out
    assert json.loads(folder.verdict.read_text())["label"]
    [attempt] = read_attempts(folder)
    assert (attempt.cause, attempt.last_step, attempt.job != "") == ("finished", 40, True)
    [entry] = Registry(registry_path).entries()
    assert (entry.status, entry.last_step) == ("finished", 40)
    assert "fontaine-tui: slurm job" in folder.engine_out.read_text()  # the job's own output
    history = read_history([(folder.root / "telemetry.node0.jsonl").read_bytes()])
    [(node, samples)] = history.nodes.items()  # the node's history, by the node's name
    assert node == cluster.hostname and samples[-1].values["mem"], node
    assert (
        not [  # the recorder ended with the job
            p.pid
            for p in psutil.process_iter(["cmdline"])
            if str(folder.root) in " ".join(p.info["cmdline"] or ()) and "recorder" in str(p.info)
        ]
    )


def test_a_refused_submission_leaves_no_launched_run(
    cluster, tmp_path: Path, registry_path: Path
) -> None:
    res = cli(
        cluster, tmp_path, "launch", "smoke", "--on", "slurm:nosuchpartition", "--output-dir", "run"
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "sbatch --partition=nosuchpartition:" in res.stderr and "Traceback" not in res.stderr
    folder = RunFolder(tmp_path / "run")
    assert not folder.root.exists()  # made for this launch, empty again: removed
    assert Registry(registry_path).entries() == []
    again = cli(
        cluster,
        tmp_path,
        "launch",
        "smoke",
        "--on",
        "slurm:debug",
        "--detach",
        "--output-dir",
        "run",
        config='[slurm]\nmem = "64G\\n#SBATCH --uid=0"\n',
    )
    assert again.returncode == 2 and "slurm.mem: expected a size" in again.stderr


def test_a_job_held_in_the_queue_is_cancelled(cluster, tmp_path: Path, registry_path: Path) -> None:
    cluster.run("scontrol", "update", f"PartitionName={PARTITION}", "State=DOWN", check=True)
    try:
        res = cli(
            cluster,
            tmp_path,
            "launch",
            "smoke",
            "--on",
            f"slurm:{PARTITION}",
            "--detach",
            "--output-dir",
            "run",
        )
        assert res.returncode == 0, res.stdout + res.stderr
        [entry] = Registry(registry_path).entries()
        runs = cli(cluster, tmp_path, "runs", "--json")
        [row] = [json.loads(ln) for ln in runs.stdout.splitlines()]
        assert row["state"] == "running" and "PENDING" in row["detail"], row
        stop = cli(cluster, tmp_path, "stop", "run", "--yes", "--json")
        assert stop.returncode == 0, stop.stdout + stop.stderr
        info = json.loads(stop.stdout.splitlines()[-1])
        assert info["last_step"] == 0 and "CANCELLED" in info["output"], info
        assert cluster.show_job(entry.job)["JobState"] == "CANCELLED"
    finally:
        cluster.run("scontrol", "update", f"PartitionName={PARTITION}", "State=UP")


def forge_begin(entry, job: str) -> RunFolder:
    """Append a begin line naming `job` to the run's attempts.jsonl, as a hostile hand would."""
    forged = {
        "event": "begin",
        "attempt": 2,
        "kind": "resume",
        "pid": 0,
        "pid_started": None,
        "host": entry.host,
        "at": "2026-01-01T00:00:00Z",
        "log_offset": 0,
        "out_offset": 0,
        "cgroup": None,
        "vmstat_oom_kill_at_start": None,
        "job": job,
    }
    folder = RunFolder(Path(entry.run_dir))
    with folder.attempts.open("a") as fh:
        fh.write(json.dumps(forged) + "\n")
    return folder


def test_a_job_the_run_never_submitted_is_never_cancelled(
    cluster, tmp_path: Path, registry_path: Path
) -> None:
    """The registry (a file its user may edit) names another job of the user's: `stop` refuses
    in one line and the job stays queued. So does a begin line naming it, put into the run's
    attempts.jsonl: the scheduler's own record of the job (its folder, its name) is not the
    run's. The run's own job is then stopped as ever."""
    cluster.run("scontrol", "update", f"PartitionName={PARTITION}", "State=DOWN", check=True)
    foreign = ""
    try:
        res = cli(
            cluster,
            tmp_path,
            "launch",
            "smoke",
            "--on",
            f"slurm:{PARTITION}",
            "--detach",
            "--output-dir",
            "run",
        )
        assert res.returncode == 0, res.stdout + res.stderr
        [entry] = Registry(registry_path).entries()
        other = tmp_path / "elsewhere"
        other.mkdir()
        foreign = cluster.sbatch(
            f"--partition={PARTITION}",
            f"--chdir={other}",
            "--job-name=smoke",  # the run's own name: the folder still tells them apart
            "--wrap",
            "sleep 600",
        )
        registry = Registry(registry_path)
        registry.update(entry.run_dir, entry.host, job=foreign)

        def stop_refused(*words: str) -> None:
            stop = cli(cluster, tmp_path, "stop", "run", "--yes", "--json")
            err = stop.stderr.strip()
            assert stop.returncode == 2 and "\n" not in err and "Traceback" not in err, err
            assert f"slurm job {foreign}" in err and all(w in err for w in words), err
            assert cluster.show_job(foreign)["JobState"] == "PENDING"

        stop_refused("no attempt of this run", "attempts.jsonl")
        folder = forge_begin(entry, foreign)
        stop_refused("WorkDir", str(other))
        # a job of another name in the run's own folder is not the run's either
        cluster.run("scontrol", "update", f"JobId={foreign}", f"WorkDir={folder.root}", check=True)
        cluster.run("scontrol", "update", f"JobId={foreign}", "JobName=not-smoke", check=True)
        stop_refused("JobName", "not-smoke")
        registry.update(entry.run_dir, entry.host, job=entry.job)  # the run's own job again
        stop = cli(cluster, tmp_path, "stop", "run", "--yes", "--json")
        assert stop.returncode == 0, stop.stdout + stop.stderr
        assert cluster.show_job(entry.job)["JobState"] == "CANCELLED"
        assert cluster.show_job(foreign)["JobState"] == "PENDING"
    finally:
        cluster.run("scontrol", "update", f"PartitionName={PARTITION}", "State=UP")
        if foreign:
            cluster.run("scancel", foreign)


def test_an_ended_job_the_run_never_submitted_is_not_taken_for_its_end(
    cluster, tmp_path: Path, registry_path: Path, monkeypatch
) -> None:
    """The registry names another job of the user's that has ended (cancelled): `stop` refuses
    in one line, as for one still queued, and records nothing: the run is not said to have
    ended with that job, however soon the scheduler says it ended, and its own job stays
    queued until it is stopped."""
    cluster.run("scontrol", "update", f"PartitionName={PARTITION}", "State=DOWN", check=True)
    try:
        res = cli(
            cluster,
            tmp_path,
            "launch",
            "smoke",
            "--on",
            f"slurm:{PARTITION}",
            "--detach",
            "--output-dir",
            "run",
        )
        assert res.returncode == 0, res.stdout + res.stderr
        [entry] = Registry(registry_path).entries()
        other = tmp_path / "elsewhere"
        other.mkdir()
        foreign = cluster.sbatch(
            f"--partition={PARTITION}", f"--chdir={other}", "--job-name=smoke", "--wrap", "true"
        )
        cluster.run("scancel", foreign, check=True)
        wait_for(lambda: cluster.show_job(foreign)["JobState"] == "CANCELLED", "cancelled")
        Registry(registry_path).update(entry.run_dir, entry.host, job=foreign)
        before = RunFolder(Path(entry.run_dir)).attempts.read_bytes()

        stop = cli(cluster, tmp_path, "stop", "run", "--yes", "--json")
        err = stop.stderr.strip()
        assert stop.returncode == 2 and "\n" not in err and "Traceback" not in err, err
        assert f"slurm job {foreign}" in err and "no attempt of this run" in err, err
        assert stop.stdout == "", stop.stdout
        [after] = Registry(registry_path).entries()
        assert after.status == "running", after
        assert RunFolder(Path(entry.run_dir)).attempts.read_bytes() == before
        assert cluster.show_job(entry.job)["JobState"] == "PENDING"
        # the handle `stop` holds, once the scheduler has said the job ended
        monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
        [named] = Registry(registry_path).entries()
        handle = LaunchedRun.from_registry(named, Registry(registry_path), named.host).handle
        try:
            wait_for(lambda: (s := slurm_client.query(foreign)) and not s.active, "ended")
            assert handle.wait(1.0, interval=0.1) is None
            with pytest.raises(InputError, match=f"slurm job {foreign}: the registry names it"):
                handle.stop()
        finally:
            handle.close()
        assert RunFolder(Path(entry.run_dir)).attempts.read_bytes() == before

        Registry(registry_path).update(entry.run_dir, entry.host, job=entry.job)
        stop = cli(cluster, tmp_path, "stop", "run", "--yes", "--json")
        assert stop.returncode == 0, stop.stdout + stop.stderr
        assert cluster.show_job(entry.job)["JobState"] == "CANCELLED"
    finally:
        cluster.run("scontrol", "update", f"PartitionName={PARTITION}", "State=UP")


def test_another_users_job_in_the_runs_folder_and_name_is_never_cancelled(
    cluster, tmp_path: Path, registry_path: Path
) -> None:
    """A job another user submitted (root's `sbatch --uid`, as an operator could) in the run's
    own folder under the run's own name, recorded by the registry and a begin line of the
    run's attempts.jsonl: its UserId is not this user's, so `stop` refuses in one line and the
    job stays queued. The run's own job is then stopped as ever."""
    other = pwd.getpwnam("nobody")
    assert other.pw_uid != os.getuid()
    cluster.run("scontrol", "update", f"PartitionName={PARTITION}", "State=DOWN", check=True)
    foreign = ""
    try:
        res = cli(
            cluster,
            tmp_path,
            "launch",
            "smoke",
            "--on",
            f"slurm:{PARTITION}",
            "--detach",
            "--output-dir",
            "run",
        )
        assert res.returncode == 0, res.stdout + res.stderr
        [entry] = Registry(registry_path).entries()
        foreign = cluster.sbatch(
            f"--partition={PARTITION}",
            f"--uid={other.pw_uid}",
            f"--gid={other.pw_gid}",
            f"--chdir={entry.run_dir}",
            "--job-name=smoke",
            "--wrap",
            "sleep 600",
        )
        fields = cluster.show_job(foreign)
        assert (fields["WorkDir"], fields["JobName"]) == (entry.run_dir, "smoke")
        assert fields["UserId"] == f"{other.pw_name}({other.pw_uid})"
        folder = forge_begin(entry, foreign)
        registry = Registry(registry_path)
        registry.update(entry.run_dir, entry.host, job=foreign)
        stop = cli(cluster, tmp_path, "stop", "run", "--yes", "--json")
        err = stop.stderr.strip()
        assert stop.returncode == 2 and "\n" not in err and "Traceback" not in err, err
        assert f"slurm job {foreign}: its UserId is {other.pw_name}({other.pw_uid})" in err, err
        assert cluster.show_job(foreign)["JobState"] == "PENDING"
        # the run's own job is this user's, and would be refused to any other uid
        me, uid = pwd.getpwuid(os.getuid()).pw_name, os.getuid()
        assert slurm_job.not_the_runs(folder, entry.job, cluster.env()) == ""
        assert slurm_job.not_the_runs(folder, entry.job, cluster.env(), uid=uid + 4242) == (
            f"slurm job {entry.job}: its UserId is {me}({uid}), not this user's uid "
            f"{uid + 4242}: not the run's job"
        )
        registry.update(entry.run_dir, entry.host, job=entry.job)  # the run's own job again
        stop = cli(cluster, tmp_path, "stop", "run", "--yes", "--json")
        assert stop.returncode == 0, stop.stdout + stop.stderr
        assert cluster.show_job(entry.job)["JobState"] == "CANCELLED"
        assert cluster.show_job(foreign)["JobState"] == "PENDING"
    finally:
        cluster.run("scontrol", "update", f"PartitionName={PARTITION}", "State=UP")
        if foreign:
            cluster.run("scancel", foreign)


def test_the_schedulers_record_of_a_job_reads_back_whole(cluster, tmp_path: Path) -> None:
    """`scontrol show job` of a job whose folder and name hold spaces and `Key=` text: its
    WorkDir and JobName come back as they were given, never cut at a space."""
    folder = tmp_path / "run a WorkDir=x JobName=y %j"
    folder.mkdir()
    name = "my run JobState=RUNNING"
    job = cluster.sbatch(
        f"--partition={PARTITION}",
        f"--chdir={folder}",
        f"--job-name={name}",
        "--hold",
        "--wrap",
        "true",
    )
    try:
        fields = slurm_client.show_job(job, cluster.env())
        assert fields is not None, cluster.run("scontrol", "show", "job", job).stdout
        assert (fields["JobId"], fields["WorkDir"], fields["JobName"]) == (job, str(folder), name)
        assert fields["JobState"] == "PENDING"
    finally:
        cluster.run("scancel", job)
    assert slurm_client.show_job("999999", cluster.env()) is None


PERCENT = "run %j %x 100%% %N done%"  # sbatch's filename patterns, literal in a folder name


@pytest.mark.parametrize("name", [PERCENT, "back\\slash %j"])
def test_the_jobs_output_lands_in_a_folder_named_with_patterns(
    cluster, tmp_path: Path, name: str
) -> None:
    """sbatch expands %j, %x, %%... in --output (a backslash turns that off and is itself
    an escape): the folder's own engine.out.log gets the output, not a file named after the
    job, and the job runs in the folder (--chdir is taken as it is)."""
    folder = RunFolder(tmp_path / name)
    folder.root.mkdir()
    script = folder.root / "job.sbatch"
    script.write_text('#!/bin/bash\necho "job $SLURM_JOB_ID in $PWD"\n')
    job = slurm_client.submit(folder, script, PARTITION, "pct", env=cluster.env())
    wait_for(
        lambda: (s := slurm_client.query(job, cluster.env())) is not None and not s.active,
        "the job ends",
        120,
    )
    assert folder.engine_out.read_text() == f"job {job} in {folder.root}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # nothing beside it


@pytest.mark.ssh
@pytest.mark.engine
@pytest.mark.slow
def test_submitted_from_a_login_node_over_ssh(
    cluster, remote, remote_cache, tmp_path: Path, registry_path: Path
) -> None:
    from fontaine_tui.core.launch.remote import RemoteEngine
    from fontaine_tui.core.runs.hosts import HostSettings

    project = remote.home / "slurm project"
    long_smoke(project / "presets")
    for path in (project, project / "presets"):
        shutil.chown(path, USER)
    env = {
        "SLURM_CONF": str(cluster.conf),
        "FONTAINE_REGISTRY": str(remote.home / "st.toml"),
        "XDG_CACHE_HOME": str(remote_cache),  # the corpus already built there
        "XDG_CONFIG_HOME": str(remote.home),
    }
    config = (
        f"[hosts.{ALIAS}]\nproject = {json.dumps(str(project))}\n"
        f"python = {json.dumps(str(remote.python))}\nenv = {{"
        + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
        + "}\n"
    )
    preset = long_smoke(tmp_path / "presets")
    res = cli(
        cluster,
        tmp_path,
        "launch",
        str(preset),
        "--on",
        f"slurm:{PARTITION}@{ALIAS}",
        "--detach",
        "--output-dir",
        "runs/s",
        "--ssh-config",
        str(remote.config),
        config=config,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    [entry] = Registry(registry_path).entries()
    assert (entry.host, entry.pid, entry.run_dir) == (ALIAS, 0, str(project / "runs" / "s"))
    assert entry.job.isdigit() and f"slurm job {entry.job} via {ALIAS}" in res.stdout
    assert cluster.show_job(entry.job)["UserId"].startswith(f"{USER}(")  # submitted as the login
    folder = RunFolder(project / "runs" / "s")
    wait_for(lambda: log_step(folder) >= 2, "the job trains")
    runs = cli(
        cluster,
        tmp_path,
        "runs",
        "--json",
        "--ssh-config",
        str(remote.config),
        "--timeout",
        "20",
        config=config,
    )
    [row] = [json.loads(ln) for ln in runs.stdout.splitlines()]
    assert (row["host"], row["state"]) == (ALIAS, "running"), row
    settings = HostSettings(ALIAS, str(project), str(remote.python), env)
    engine = RemoteEngine(
        settings, entry.run_dir, 0, ("-F", str(remote.config)), 0.5, job=entry.job
    )
    try:
        assert engine.alive() is True
        info = engine.stop()  # `fontaine-tui stop` there: scancel --signal=INT, ...
    finally:
        engine.close()
    assert (info.status, info.signal) == ("stopped", "SIGINT"), info
    again = RemoteEngine(settings, entry.run_dir, 0, ("-F", str(remote.config)), 60, job=entry.job)
    try:
        assert again.alive() is False  # squeue there no longer lists it
    finally:
        again.close()


def test_without_slurm_on_path_nothing_is_written(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PATH": str(Path(sys.executable).parent),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "fontaine_tui",
            "launch",
            "smoke",
            "--on",
            "slurm:gpu",
            "--output-dir",
            "run",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "sbatch: not found on PATH" in res.stderr and not (tmp_path / "run").exists()


# -- pure ---------------------------------------------------------------------------------------


def test_targets() -> None:
    assert slurm.parse_on_slurm("gpu-node") is None
    assert slurm.parse_on_slurm("slurm:gpu") == slurm.OnSlurm("gpu", None)
    assert slurm.parse_on_slurm("slurm:a100.q@login1") == slurm.OnSlurm("a100.q", "login1")
    for bad in ("slurm:", "slurm:a b", "slurm:$(x)", "slurm:gpu@-oProxyCommand=x"):
        with pytest.raises(InputError):
            slurm.parse_on_slurm(bad)


def test_sbatch_gets_the_output_path_escaped_and_the_folder_as_it_is(
    tmp_path: Path, monkeypatch
) -> None:
    """The sbatch on PATH here records its argv: --output has `%` written `%%` (a path with a
    backslash: its backslashes doubled, its `%` left, as Slurm then expands nothing), while
    --chdir and the script's path are literal."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(
        '#!/bin/sh\nfor a in "$@"; do printf \'%s\\n\' "$a"; done > "$0.argv"\necho 42\n'
    )
    sbatch.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    for name, output in (
        (PERCENT, "run %%j %%x 100%%%% %%N done%%"),
        ("a\\b %j", "a\\\\b %j"),
        ("plain", "plain"),
    ):
        folder = RunFolder(tmp_path / name)
        folder.root.mkdir()
        script = folder.root / "job.sbatch"
        assert slurm_client.submit(folder, script, "gpu", "x") == "42"
        argv = (bin_dir / "sbatch.argv").read_text().splitlines()
        assert f"--output={tmp_path}/{output}/engine.out.log" in argv, argv
        assert f"--chdir={folder.root}" in argv and argv[-1] == str(script)


def test_settings_are_checked_key_by_key(tmp_path: Path) -> None:
    conf = tmp_path / "config.toml"
    assert slurm.slurm_settings(conf) == slurm.SlurmSettings()
    conf.write_text(
        '[slurm]\ntime = "1-12:00:00"\naccount = "ml-lab"\ncpus_per_task = 8\n'
        'gres = "gpu:a100:8"\nport = 29600\n'
    )
    s = slurm.slurm_settings(conf)
    assert (s.time, s.account, s.cpus_per_task, s.gres, s.port) == (
        "1-12:00:00",
        "ml-lab",
        "8",
        "gpu:a100:8",
        29600,
    )
    for text, key in (
        ('qos = "a b"', "slurm.qos"),
        ('time = "1h"', "slurm.time"),
        ("port = 0", "slurm.port"),
        ('partition = "x"', "slurm.partition"),
        ('account = "x\\n#SBATCH --uid=0"', "slurm.account"),
    ):
        conf.write_text(f"[slurm]\n{text}\n")
        with pytest.raises(InputError, match=key.replace(".", r"\.")):
            slurm.slurm_settings(conf)


def test_a_presets_time_limit_is_checked_and_hashed_only_when_set(tmp_path: Path) -> None:
    from fontaine_tui.core.preset.checks import PresetError
    from fontaine_tui.core.preset.find import load_preset

    text = (ROOT / "presets" / "smoke.toml").read_text()
    plain = load_preset(ROOT / "presets" / "smoke.toml")
    path = tmp_path / "smoke.toml"
    path.write_text(text + '\n[slurm]\ntime = ""\n')
    assert load_preset(path).sha256 == plain.sha256  # left at its default: the same hash
    path.write_text(text + '\n[slurm]\ntime = "2:00:00"\n')
    assert load_preset(path).sha256 != plain.sha256
    path.write_text(text + '\n[slurm]\ntime = "2 hours"\n')
    with pytest.raises(PresetError, match=r"slurm\.time: expected minutes"):
        load_preset(path)
    path.write_text(text + '\n[slurm]\naccount = "lab"\n')  # the user's, not the preset's
    with pytest.raises(PresetError, match=r"slurm\.account"):
        load_preset(path)


ARGV = [
    "/opt/py env/bin/python",
    "-m",
    "fontaine_engine",
    "train",
    "--run-name",
    "r",
    "--output-dir",
    "/runs/a b; $(touch PWNED)",
    "--steps",
    "10",
]


def test_scripts_for_one_rank_several_ranks_and_several_nodes(tmp_path: Path) -> None:
    settings = slurm.SlurmSettings(time="60", account="lab", port=29700)
    one = slurm.render_script(ARGV, {"nproc": 1, "nnodes": 1, "device": "cpu"}, settings, "r")
    assert "#SBATCH --nodes=1\n" in one and "--gpus-per-node" not in one
    assert (
        "exec '/opt/py env/bin/python' -m fontaine_engine train --run-name r --output-dir "
        "'/runs/a b; $(touch PWNED)' --steps 10\n"
    ) in one
    ranks = slurm.render_script(ARGV, {"nproc": 4, "nnodes": 1, "device": "cuda"}, settings, "r")
    assert "#SBATCH --gpus-per-node=4\n" in ranks
    assert "-m torch.distributed.run --nproc-per-node 4 -m fontaine_engine train" in ranks
    nodes = slurm.render_script(ARGV, {"nproc": 8, "nnodes": 2, "device": "cuda"}, settings, "r")
    assert "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n" in nodes
    assert "#SBATCH --time=60\n#SBATCH --account=lab\n" in nodes
    assert (
        "exec srun --kill-on-bad-exit=1 --ntasks-per-node=1 '/opt/py env/bin/python' -m "
        'torch.distributed.run --nnodes "$SLURM_NNODES" --nproc-per-node 8 --rdzv-backend '
        'c10d --rdzv-endpoint "$head:29700" --rdzv-id "$SLURM_JOB_ID" '
        "-m fontaine_engine"
    ) in nodes
    for text in (one, ranks, nodes):  # each a valid bash script
        path = tmp_path / "job.sbatch"
        path.write_text(text)
        assert subprocess.run(["bash", "-n", str(path)]).returncode == 0


def test_every_node_of_a_job_runs_the_telemetry_recorder(tmp_path: Path) -> None:
    settings = slurm.SlurmSettings(port=29700)
    rec = ("/opt/py env/bin/python", Path("/runs/a b"))
    line = (
        "'/opt/py env/bin/python' -m fontaine_tui.core.host.recorder '/runs/a b' "
        '--pid $$ --node "${SLURM_NODEID:-0}" &'
    )
    one = slurm.render_script(ARGV, {"nproc": 1, "nnodes": 1}, settings, "r", rec)
    assert f"{line}\nexec '/opt/py env/bin/python' -m fontaine_engine train" in one
    nodes = slurm.render_script(ARGV, {"nproc": 8, "nnodes": 2}, settings, "r", rec)
    srun = nodes.splitlines()[-1]
    assert srun.startswith("exec srun --kill-on-bad-exit=1 --ntasks-per-node=1 bash -c ")
    inner = shlex.split(srun)[-1]  # what each node's shell runs: its recorder, then its ranks
    assert inner.startswith(line + " exec '/opt/py env/bin/python' -m torch.distributed.run")
    command = slurm.render_command_script(["train.sh"], Path("/w"), {}, settings, "r", rec)
    assert f"cd /w\n{line}\nexec train.sh\n" in command
    for text in (one, nodes, command):
        path = tmp_path / "job.sbatch"
        path.write_text(text)
        assert subprocess.run(["bash", "-n", str(path)]).returncode == 0
        assert subprocess.run(["bash", "-n", "-c", inner]).returncode == 0


def test_a_new_script_never_replaces_a_file(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    (tmp_path / "job.sbatch").write_text("the user's own\n")
    path = slurm.write_script(folder, "#!/bin/bash\n")
    assert (
        path.name == "job.2.sbatch" and (tmp_path / "job.sbatch").read_text() == "the user's own\n"
    )


def test_the_schedulers_ends_are_said(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    write_log(folder.log, [meta(), train(5, T0 + 5, 2.0)])
    oom = slurm_job.scheduler_exit(folder, "17", slurm_client.JobState("OUT_OF_MEMORY", 0, 9))
    assert oom.cause == "oom-killed" and "slurm job 17" in oom.cause_detail
    gone = slurm_job.scheduler_exit(folder, "18", slurm_client.JobState("NODE_FAIL", None, None))
    assert gone.status == "killed" and "a node of the job failed" in gone.output
    ok = slurm_job.scheduler_exit(folder, "19", slurm_client.JobState("COMPLETED", 0, 0))
    assert ok.output == "" and ok.code == 0
    failed = slurm_job.scheduler_exit(folder, "20", slurm_client.JobState("FAILED", 3, 0))
    assert (failed.code, failed.cause) == (3, "crashed")


@pytest.mark.slow
def test_a_presets_own_command_runs_as_a_slurm_job(
    cluster, tmp_path: Path, registry_path: Path
) -> None:
    """A [command] preset on Slurm: its argv, cwd and frozen env in the job script, run on
    the node, its JSONL read through [source], finished with its verdict under --plain."""
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "train.py").write_text(
        "import json, os, sys\n"
        "out = os.environ['FONTAINE_OUTPUT_DIR']\n"
        "assert os.getcwd().endswith('work') and os.environ['MODE'] == 'box', 'cwd or env'\n"
        "with open(os.path.join(out, 'metrics.jsonl'), 'a') as f:\n"
        "    for s in range(1, 21):\n"
        "        f.write(json.dumps({'step': s, 'loss': 1.0 / s}) + '\\n')\n"
        "        if s % 10 == 0:\n"
        "            f.write(json.dumps({'step': s, 'eval/mae': 2.0 - s / 20}) + '\\n')\n"
    )
    preset = tmp_path / "own.toml"
    preset.write_text(f'''[run]
name = "own_slurm"
output_dir = "run"
[command]
argv = ["{sys.executable}", "train.py"]
cwd = "work"
env = {{ MODE = "box" }}
[source]
kind = "jsonl"
[verdict]
metric = "eval/mae"
anchor_step = 10
endpoint_step = 20
healthy_max = 0.0
drift_min = 0.2
''')
    res = cli(
        cluster,
        tmp_path,
        "launch",
        str(preset),
        "--on",
        f"slurm:{PARTITION}",
        "--plain",
        "--poll",
        "0.5",
    )
    out = res.stdout + res.stderr
    assert "Traceback" not in out, out
    folder = RunFolder(tmp_path / "run")
    script = (folder.root / slurm.SCRIPT).read_text()
    assert "export MODE=box" in script and f"cd {tmp_path / 'work'}" in script, script
    assert "command finished at step 20, exit 0" in out, out
    assert res.returncode == 0, out  # HEALTHY, final
    [attempt] = read_attempts(folder)
    assert (attempt.cause, attempt.last_step) == ("finished", 20)
