"""Which live look a watched run gets: this host's for its engine, none for a Slurm job."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.slurm.job import SlurmJob
from fontaine_tui.model.sampler import ON_NODE, live_telemetry


def test_a_slurm_job_gets_no_look_at_this_host(tmp_path: Path) -> None:
    job = SlurmJob(RunFolder(tmp_path), "12", watch=False)
    assert live_telemetry(LocalRun(tmp_path), job) == (None, ON_NODE)


def test_an_engine_here_is_sampled_with_its_tree(tmp_path: Path) -> None:
    engine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)"])
    try:
        sampler, why = live_telemetry(LocalRun(tmp_path), engine)
        assert why == "" and sampler is not None
        snap = sampler()
        assert snap.process is not None and snap.process.pid == engine.pid
    finally:
        engine.kill()
        engine.wait()


def test_a_slurm_job_is_judged_on_no_look_at_this_host_by_plain_and_babysit(tmp_path: Path) -> None:
    # launch --plain and babysit judge the warning rules on this host's RAM and GPUs: for a job
    # on a node, those are the login host's, so neither takes a look here
    from fontaine_tui.core.host.memory import hostname
    from fontaine_tui.core.runs.registry import Entry
    from fontaine_tui.model.sampler import on_node
    from fontaine_tui.model.watchman import RunWatch, WatchedRun

    assert on_node(SlurmJob(RunFolder(tmp_path), "12", watch=False))
    engine = subprocess.Popen([sys.executable, "-c", "pass"])
    engine.wait()
    assert not on_node(engine)
    entry = Entry(name="j", run_dir=str(tmp_path), host=hostname(), job="12")
    process, sampler, _ = RunWatch._process(
        WatchedRun(str(tmp_path), entry), LocalRun(tmp_path), hostname()
    )
    assert process is None and sampler is None
    here = Entry(name="h", run_dir=str(tmp_path), host=hostname())
    assert RunWatch._process(WatchedRun(str(tmp_path), here), LocalRun(tmp_path), hostname())[1]
