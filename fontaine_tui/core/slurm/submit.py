"""Launching as a Slurm batch job: `--on slurm:PARTITION`, `[slurm]` and the job script.

The login node is not where the run trains, so only the run folder's guards run here (a
folder already holding another run, the init checkpoint); the GPU and RAM checks belong to the
node Slurm picks, and Slurm's own request (`--gpus-per-node`, `--mem`) stands for them.

The engine is looked up on the submitting host, not on the node. The job script runs this
host's python (sys.executable) by its path, so the node must see the same python at the same
path, with the engine installed (a shared file system). Its modules are checked in that python
here (core/launch/enginedeps.py: a warning, as the node may have what this host lacks), and
the engine identity that prereg.json records is read from it here too.

prereg.json is frozen before anything is submitted, then `job.sbatch` is written into the run
folder (the job's whole script, kept with the run) and handed to `sbatch --parsable`
(core/slurm/client.py); core/slurm/job.py watches and stops the job.

The script holds only what this program writes: `#SBATCH` lines of numbers from the preset's
[platform] and values from `[slurm]` in config.toml, each checked against a strict pattern (no
space, quote or newline can reach the script); the engine command with every piece
shell-quoted. One node: the batch script `exec`s the engine (or torch.distributed.run for
several ranks). Several nodes: `srun` starts one torch.distributed.run per node, over a c10d
rendezvous at the job's first node on `[slurm] port`.

The telemetry recorder (core/host/recorder.py) runs on every node, started by the same shell
that then `exec`s the engine, so it watches the engine's own pid ($$) and writes that node's
history, telemetry.node$SLURM_NODEID.jsonl, with the node's name, into the run folder; it exits
when the engine does, and Slurm ends it with the job in any case.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fontaine_tui.core import tomlfile
from fontaine_tui.core.enginename import ENGINE_MODULE
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.recorder import MODULE as RECORDER
from fontaine_tui.core.readfile import read_text
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.ssh.destination import check_destination

SCRIPT = "job.sbatch"
PARTITION = re.compile(r"[A-Za-z0-9_.-]+")
PATTERNS: dict[str, tuple[re.Pattern[str], str]] = {
    "time": (re.compile(r"(\d+-)?\d+(:\d{1,2}){0,2}"), "minutes, H:MM:SS or D-HH:MM:SS"),
    "account": (PARTITION, "a Slurm account name"),
    "qos": (PARTITION, "a Slurm QOS name"),
    "constraint": (re.compile(r"[A-Za-z0-9_.&|()\[\]*:,!-]+"), "a node feature expression"),
    "mem": (re.compile(r"\d+[KMGT]?"), "a size such as 64G"),
    "cpus_per_task": (re.compile(r"[1-9]\d{0,3}"), "a positive number of CPUs"),
    "gres": (re.compile(r"[A-Za-z0-9_.:,-]+"), "a generic resource list such as gpu:a100:8"),
}


def check_host(name: str) -> None:
    """Check a host as ssh will take it: no option, no space, no shell or control character.

    The check lives here, beside `slurm:PARTITION@LOGIN`'s parsing, so that remote.py may import
    this module."""
    check_destination(name, "--on")


@dataclass(frozen=True, slots=True)
class OnSlurm:
    partition: str
    host: str | None  # a login node to submit from over SSH; None: submit from here


def parse_on_slurm(on: str) -> OnSlurm | None:
    """`slurm:PARTITION[@LOGIN]` as a target; None when `on` is a plain host."""
    if not on.startswith("slurm:"):
        return None
    partition, _, host = on[len("slurm:") :].partition("@")
    if not PARTITION.fullmatch(partition):
        raise InputError(
            f"--on {on!r}: expected slurm:PARTITION[@LOGIN] (a partition name of "
            "letters, digits, '_', '.', '-')"
        )
    if host:
        check_host(host)
    return OnSlurm(partition, host or None)


@dataclass(frozen=True, slots=True)
class SlurmSettings:
    """`[slurm]` in config.toml: what a user's cluster asks of every job.

    It is never part of the preset and never hashed: an account or a QOS is the user's, not the
    experiment's."""

    time: str = ""
    account: str = ""
    qos: str = ""
    constraint: str = ""
    mem: str = ""
    cpus_per_task: str = ""
    gres: str = ""
    port: int = 29500  # the c10d rendezvous port on the job's first node (several nodes)


def slurm_settings(config: Path) -> SlurmSettings:
    """`[slurm]` of config.toml; defaults without one; InputError naming the key otherwise."""
    try:
        doc = tomlfile.loads(read_text(config))
    except FileNotFoundError:
        return SlurmSettings()
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{config}: cannot read ({exc})") from None
    raw = doc.get("slurm", {})
    if not isinstance(raw, dict):
        raise InputError(f"{config}: slurm: expected a table")
    known = {f.name for f in dataclasses.fields(SlurmSettings)}
    values: dict[str, Any] = {
        key: _setting(config, key, value, known) for key, value in raw.items()
    }
    return SlurmSettings(**values)


def _setting(config: Path, key: str, value: object, known: set[str]) -> str | int:
    """One key of `[slurm]`, checked.

    The port is a port number; any other is in its form (`PATTERNS`), a whole number taken as
    its text."""
    if key not in known:
        raise InputError(
            f"{config}: slurm.{key}: unknown key (expected one of {', '.join(sorted(known))})"
        )
    if key == "port":
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 65536:
            raise InputError(f"{config}: slurm.port: expected a port number, got {value!r}")
        return value
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    pattern, what = PATTERNS[key]
    if not isinstance(text, str) or not pattern.fullmatch(text):
        raise InputError(f"{config}: slurm.{key}: expected {what}, got {value!r}")
    return text


# -- the job script ---------------------------------------------------------------------------


def _engine_tail(argv: Sequence[str]) -> list[str]:
    """`fontaine_engine train ...` of build_argv's command (after its `-m`)."""
    for i in range(1, len(argv)):
        if argv[i] == ENGINE_MODULE and argv[i - 1] == "-m":
            return list(argv[i:])
    raise ValueError(f"not an engine command: {argv!r}")


def recorder_line(python: str, folder: Path) -> str:
    """The recorder of one node, in the background, watching the shell about to `exec` the run."""
    return (
        f"{shlex.quote(python)} -m {RECORDER} {shlex.quote(str(folder))} "
        '--pid $$ --node "${SLURM_NODEID:-0}" &'
    )


def render_script(
    argv: Sequence[str],
    platform: Mapping[str, object],
    settings: SlurmSettings,
    run_name: str,
    recorder: tuple[str, Path] | None = None,
) -> str:
    """The batch script for build_argv's `argv` under [platform] (nproc, nnodes, device).

    `recorder` (the python that has fontaine-tui, the run folder) starts the telemetry
    recorder on each node."""
    python, tail = argv[0], _engine_tail(argv)
    nproc, nnodes = int(str(platform["nproc"])), int(str(platform.get("nnodes", 1)))
    cuda = str(platform.get("device", "cpu")) == "cuda"
    lines = [
        "#!/bin/bash",
        f"# The engine of run {_comment(run_name)} as a Slurm batch job: written by",
        "# `fontaine-tui launch --on slurm:...` beside the run's frozen prereg.json and",
        "# submitted with sbatch. Resubmitting it by hand starts a run that no console",
        "# launched: use `fontaine-tui launch PRESET --resume --on slurm:...` instead.",
        f"#SBATCH --nodes={nnodes}",
        "#SBATCH --ntasks-per-node=1",
    ]
    if cuda:
        lines.append(f"#SBATCH --gpus-per-node={nproc}")
    for key in ("time", "account", "qos", "constraint", "mem", "cpus_per_task", "gres"):
        value = getattr(settings, key)
        if value:
            lines.append(f"#SBATCH --{key.replace('_', '-')}={value}")
    lines += [
        "set -u",
        "export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1",
        'echo "fontaine-tui: slurm job $SLURM_JOB_ID on $(hostname) (nodes: $SLURM_JOB_NODELIST)"',
    ]
    quoted = " ".join(map(shlex.quote, tail))
    py = shlex.quote(python)
    if nnodes > 1:
        run = (
            f'{py} -m torch.distributed.run --nnodes "$SLURM_NNODES" --nproc-per-node {nproc} '
            f'--rdzv-backend c10d --rdzv-endpoint "$head:{settings.port}" '
            f'--rdzv-id "$SLURM_JOB_ID" -m {quoted}'
        )
        if recorder is not None:  # one shell per node: its recorder, then its run
            run = "bash -c " + shlex.quote(f"{recorder_line(*recorder)} exec {run}")
        lines += [
            'export head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
            f"exec srun --kill-on-bad-exit=1 --ntasks-per-node=1 {run}",
        ]
        return "\n".join(lines) + "\n"
    if recorder is not None:
        lines.append(recorder_line(*recorder))
    if nproc > 1:
        lines.append(f"exec {py} -m torch.distributed.run --nproc-per-node {nproc} -m {quoted}")
    else:
        lines.append(f"exec {py} -m {quoted}")
    return "\n".join(lines) + "\n"


def render_command_script(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    settings: SlurmSettings,
    run_name: str,
    recorder: tuple[str, Path] | None = None,
) -> str:
    """The batch script for a preset's own [command].

    It runs one task, in the command's folder, with its frozen env (and FONTAINE_OUTPUT_DIR)
    exported, the argv run as it is. GPUs and the rest are the user's to ask for through
    [slurm] in config.toml (gres, ...). `recorder` as render_script's."""
    lines = [
        "#!/bin/bash",
        f"# The [command] of run {_comment(run_name)} as a Slurm batch job: written by",
        "# `fontaine-tui launch --on slurm:...` beside the run's frozen prereg.json and",
        "# submitted with sbatch. Resubmitting it by hand starts a run that no console",
        "# launched: use `fontaine-tui launch PRESET --resume --on slurm:...` instead.",
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks-per-node=1",
    ]
    for key in ("time", "account", "qos", "constraint", "mem", "cpus_per_task", "gres"):
        value = getattr(settings, key)
        if value:
            lines.append(f"#SBATCH --{key.replace('_', '-')}={value}")
    lines += ["set -u", "export PYTHONUNBUFFERED=1"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    lines += [
        'echo "fontaine-tui: slurm job $SLURM_JOB_ID on $(hostname) (nodes: $SLURM_JOB_NODELIST)"',
        f"cd {shlex.quote(str(cwd))}",
        *([recorder_line(*recorder)] if recorder is not None else []),
        "exec " + " ".join(map(shlex.quote, argv)),
    ]
    return "\n".join(lines) + "\n"


def _comment(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)


def write_script(folder: RunFolder, text: str) -> Path:
    """Write the job's script in the run folder: job.sbatch, or job.N.sbatch for a later attempt.

    The file is created, never written over: a file there is the user's or an earlier attempt's."""
    for n in range(1, 1000):
        path = folder.root / (SCRIPT if n == 1 else f"job.{n}.sbatch")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return path
    raise InputError(f"{folder.root}: job.1.sbatch ... job.999.sbatch all exist")
