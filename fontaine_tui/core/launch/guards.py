"""Host guards: checks of whether a launch is safe.

They are pure checks over a preset, a telemetry snapshot and the run folder. Each answers
with findings, and any "refuse" finding stops the launch."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.launch.endpoint import nothing_to_resume
from fontaine_tui.core.launch.enginedeps import engine_deps
from fontaine_tui.core.launch.logtail import CHECKPOINT_DIR, newest_checkpoint
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.preset.sections import layout
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.text import MIB, gib, literal, mib

# RAM the engine needs, per piece (estimates measured on the tiny/small engine, rounded up).
# They were measured as RSS, which counts the pages a worker shares with its rank in both; the
# engine tree's memory as the telemetry gives it (core/host/memory.py's process_memory, PSS)
# counts them once, so the estimate stays above what the tree is seen to hold: the safe side.
RANK_BYTES = 800 * MIB  # one training process: torch, transformers, model, corpus mmap pages
WORKER_BYTES = 400 * MIB  # one DataLoader worker process
SAMPLE_BYTES = 16 << 10  # one prefetched sample: 32x32x3 float image, actions, flow noise
LEVELS = ("ok", "info", "warn", "refuse")
# NVML answers that mean CUDA cannot see a GPU either (other NVML errors only blind us)
NO_GPU = (
    "no NVIDIA GPU",
    "CUDA_VISIBLE_DEVICES=",
    "NVML: library not found",
    "NVML: driver not loaded",
)


@dataclass(frozen=True, slots=True)
class Finding:
    # "gpu" | "ram" | "folder" | "bounds" | "init" | "engine" | "command" | "code" | "delta"
    check: str
    level: str  # one of LEVELS
    message: str
    # a "delta" finding's (key, ours, theirs): refused, or declared at launch (--declare-delta)
    delta: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RamEstimate:
    bytes: int
    formula: str


def ram_estimate(preset: Preset) -> RamEstimate:
    """The RAM implied by the platform knobs.

    Per rank, that is the process plus its loader workers, each holding prefetch_factor
    micro-batches in flight."""
    nproc = int(preset.platform["nproc"])
    workers = int(preset.platform["num_workers"])
    prefetch = int(preset.platform["prefetch_factor"])
    _, micro = layout(preset.path, preset.recipe, preset.platform)  # the preset load checked it
    per_worker = WORKER_BYTES + prefetch * micro * SAMPLE_BYTES
    total = nproc * (RANK_BYTES + workers * per_worker)
    formula = (
        f"{nproc} rank(s) x ({RANK_BYTES // MIB} MiB + {workers} workers x "
        f"({WORKER_BYTES // MIB} MiB + prefetch {prefetch} x micro-batch {micro} x "
        f"{SAMPLE_BYTES >> 10} KiB))"
    )
    return RamEstimate(total, formula)


def check_ram(preset: Preset, telemetry: TelemetrySnapshot, yes_ram: bool = False) -> Finding:
    ram = telemetry.ram
    if ram is None:
        return Finding("ram", "warn", f"cannot check host RAM: {telemetry.ram_reason}")
    est = ram_estimate(preset)
    alert = float(preset.gates["ram_alert_frac"]) * ram.total
    warn = float(preset.gates["ram_warn_frac"]) * ram.total
    left = ram.available - est.bytes
    numbers = (
        f"the platform knobs imply ~{gib(est.bytes)} [{est.formula}]; "
        f"{gib(ram.available)} available of {gib(ram.total)} ({ram.source})"
    )
    if left < alert:
        if yes_ram:
            return Finding("ram", "warn", f"RAM: {numbers}; launching anyway (--yes-ram)")
        return Finding(
            "ram",
            "refuse",
            f"RAM: {numbers}, which would leave under "
            f"{float(preset.gates['ram_alert_frac']):.0%} free; lower "
            f"platform.num_workers / prefetch_factor, or --yes-ram to launch anyway",
        )
    if left < warn:
        return Finding(
            "ram",
            "warn",
            f"RAM: {numbers}: under {float(preset.gates['ram_warn_frac']):.0%} would be left free",
        )
    return Finding("ram", "ok", f"RAM: {numbers}")


def check_gpus(
    preset: Preset, telemetry: TelemetrySnapshot, own_pid: int | None = None
) -> list[Finding]:
    device = str(preset.platform["device"])
    nproc = int(preset.platform["nproc"])
    if device == "cpu":
        return [Finding("gpu", "info", "device cpu: no GPU is used")]
    gpus = telemetry.gpus
    if gpus is None and device == "cuda" and telemetry.gpu_reason.startswith(NO_GPU):
        return [Finding("gpu", "refuse", f"platform.device = cuda but {telemetry.gpu_status}")]
    if gpus is None:
        level = "warn" if device == "cuda" else "info"
        return [
            Finding(
                "gpu",
                level,
                f"{telemetry.gpu_status}: cannot check that GPUs are free"
                + ("; device auto will run on CPU if CUDA sees none" if device == "auto" else ""),
            )
        ]
    if nproc > len(gpus):
        return [
            Finding(
                "gpu",
                "refuse",
                f"GPU: platform.nproc = {nproc} but only {len(gpus)} "
                f"GPU(s) are visible (CUDA_VISIBLE_DEVICES="
                f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})",
            )
        ]
    out = []
    own = os.getpid() if own_pid is None else own_pid
    for g in gpus[:nproc]:
        label = f"GPU {g.cuda_index} ({g.name}, {g.uuid})"
        if g.processes is None:
            out.append(
                Finding(
                    "gpu",
                    "warn",
                    f"{label}: the driver does not list its compute "
                    "processes; cannot check that it is free",
                )
            )
            continue
        foreign = [p for p in g.processes if p.pid != own]
        if foreign:
            held = ", ".join(
                f"pid {p.pid} {p.name}"
                + ("" if p.used_mem is None else f" holding {mib(p.used_mem, 0)}")
                for p in foreign
            )
            out.append(Finding("gpu", "refuse", f"{label} is busy: {held}"))
        else:
            used = "" if g.mem_used is None else f", {mib(g.mem_used, 0)} used"
            out.append(Finding("gpu", "ok", f"{label}: no compute process{used}"))
    return out


def _foreign_log_there(preset: Preset, folder: RunFolder) -> str:
    """What of a launched [command]'s [source] log a folder already holds; "" when none.

    Such a file is an earlier run's checkpoint or a stray *.jsonl. A store outside the folder
    (an absolute [source] path) is the user's to share between runs."""
    from fontaine_tui.core.errors import InputError
    from fontaine_tui.core.log.formats.eventdirs import SeveralRuns
    from fontaine_tui.core.log.formats.locate import files

    spec = preset.source
    if (
        preset.command is None
        or spec is None
        or spec.kind == "fontaine"
        or Path(spec.path).is_absolute()
        or not folder.root.is_dir()
    ):
        return ""
    try:
        found = [p for p in files(folder.root, spec) if p.exists()]
    except SeveralRuns as exc:  # several logs already: any of them would be read
        return f"{spec.kind} log ({', '.join(exc.found[:3])})"
    except (InputError, OSError):  # none there yet
        return ""
    names = ", ".join(
        str(p.relative_to(folder.root)) if folder.root in p.parents else str(p) for p in found[:3]
    )
    return f"{spec.kind} log ({names})" if found else ""


def check_folder(
    preset: Preset, folder: RunFolder, resume: bool, running_pid: int | None = None
) -> list[Finding]:
    """A fresh launch needs a folder without a launched run; --resume needs one with it."""
    from fontaine_tui.core.errors import InputError
    from fontaine_tui.core.verdict.prereg import compare, read_prereg

    root = folder.root
    if running_pid is not None:
        return [
            Finding(
                "folder",
                "refuse",
                f"{root}: this run is still running as pid "
                f"{running_pid} (fontaine-tui runs; stop it first)",
            )
        ]
    there = (folder.prereg, folder.log, folder.checkpoints, folder.amendments)
    marks = [p.name for p in there if p.exists()]
    if not resume:
        if marks:
            what = ", ".join(marks)
            return [
                Finding(
                    "folder",
                    "refuse",
                    f"{root} already holds a launched run ({what}); "
                    "--resume to continue it, or --output-dir DIR for a new run",
                )
            ]
        if root.exists() and not root.is_dir():
            return [Finding("folder", "refuse", f"{root}: exists and is not a folder")]
        if found := _foreign_log_there(preset, folder):
            return [
                Finding(
                    "folder",
                    "refuse",
                    f"{root} already holds a {found}: a new run "
                    "there would be read with it; --output-dir DIR for a new run",
                )
            ]
        return [Finding("folder", "ok", f"run folder {root} (new)")]
    if not folder.prereg.exists():
        why = (
            "was not launched by fontaine-tui (no prereg.json)"
            if folder.log.exists()
            else "holds no launched run"
        )
        return [Finding("folder", "refuse", f"--resume: {root} {why}")]
    try:
        prereg = read_prereg(folder)
    except InputError as exc:
        return [Finding("bounds", "refuse", f"--resume: {exc}")]
    out = []
    change = compare(prereg, preset)
    if change is not None and change.math_changed:
        return [Finding("bounds", "refuse", f"--resume: {change.message}")]
    if done := nothing_to_resume(folder):
        return [Finding("folder", "refuse", f"--resume: {root}: nothing to resume: {done}")]
    if change is not None:
        out.append(
            Finding(
                "bounds",
                "warn",
                f"{change.message} (machinery only: resuming; "
                "prereg.json keeps the launch-time preset)",
            )
        )
    else:
        out.append(
            Finding(
                "bounds",
                "ok",
                f"preset matches prereg.json "
                f"(sha256 {prereg.preset_sha256[:12]}, launched {prereg.launched_at})",
            )
        )
    if preset.command is not None:  # its own trainer finds its checkpoints (resume_argv)
        return out
    ckpt = newest_checkpoint(folder)
    if ckpt is None:
        out.append(
            Finding(
                "folder",
                "warn",
                f"--resume: no complete checkpoint in "
                f"{folder.checkpoints}: the engine starts again from step 0",
            )
        )
    else:
        out.append(Finding("folder", "ok", f"--resume from {ckpt[1].name} (step {ckpt[0]})"))
    return out


def init_found(path: Path) -> bool:
    """Whether `path` holds something the engine can start from.

    engine/init.py has the full rules. It is a Hugging Face model folder (config.json, or
    vision/ and backbone/ ones), an engine checkpoint (model.safetensors + meta.json), or a run
    or checkpoints folder with a complete step-NNNNNN checkpoint."""
    if not path.is_dir():
        return False
    if (path / "config.json").is_file() or any(
        (path / part / "config.json").is_file() for part in ("vision", "backbone")
    ):
        return True
    for folder in (path, path / "checkpoints"):
        if (folder / "model.safetensors").is_file() and (folder / "meta.json").is_file():
            return True
        if folder.is_dir() and any(
            CHECKPOINT_DIR.match(p.name) and (p / "meta.json").is_file() for p in folder.iterdir()
        ):
            return True
    return False


def check_engine(python: str = sys.executable, on_node: bool = False) -> list[Finding]:
    """Check that the engine's interpreter finds the engine and the modules it imports.

    `python` is the one engine_argv.build_argv starts the engine with (this one), asked with
    the engine maker's environment and folder (this process's), so a console installed
    without the engine's extra is refused before anything is written (core/launch/enginedeps).
    `on_node`: the interpreter runs on a Slurm node, where a missing module is a warning."""
    level, message = engine_deps(python, on_node=on_node)
    return [Finding("engine", level, message)]


def check_init(preset: Preset, cwd: Path | None = None) -> list[Finding]:
    """Check that recipe.init names a starting point that is there.

    The path is relative to the current folder, as the engine reads it. Where it is another
    preset's run folder, the refusal names the launch that makes it."""
    init = str(preset.recipe.get("init", ""))
    if not init:
        return []
    path = Path(init) if Path(init).is_absolute() else (cwd or Path.cwd()) / init
    if init_found(path):
        return [Finding("init", "ok", f"init {init}: found")]
    from fontaine_tui.core.preset.find import list_presets, load_preset

    makers = []
    for name, preset_path in list_presets().items():
        try:
            other = load_preset(str(preset_path))
        except Exception:  # noqa: BLE001 - a broken preset elsewhere says nothing here
            continue
        if other.name != preset.name and Path(str(other.run["output_dir"])) == Path(init):
            makers.append(name)
    hint = (
        (
            f"; it is the run folder of preset {makers[0]}: run `fontaine-tui launch "
            f"{makers[0]}` from this folder first"
        )
        if makers
        else ""
    )
    return [
        Finding(
            "init",
            "refuse",
            f"recipe.init {init}: no engine checkpoint or Hugging "
            f"Face model folder at {path}{hint}",
        )
    ]


def check_command(
    preset: Preset, folder: RunFolder, resume: bool, cwd: Path | None = None
) -> list[Finding]:
    """Check a [command] preset's launch.

    Its folder, program, script and launcher block must be there and right (refused
    otherwise). On --resume, each change since launch to the files it names or to its code is a
    warning, as the engine's own code change is (the run goes on, the change said)."""
    if preset.command is None:
        return []
    from fontaine_tui.core.errors import InputError
    from fontaine_tui.core.launch import command
    from fontaine_tui.core.verdict.prereg import read_prereg

    spec = preset.command
    try:
        where = command.command_cwd(preset, cwd or Path.cwd())
        argv = command.command_argv(preset, folder.root, resume, where)
    except InputError as exc:
        return [Finding("command", "refuse", str(exc))]
    env_path = command.command_env(preset, folder.root).get("PATH", os.defpath)
    program = argv[0]
    if not shutil.which(program, path=env_path) and not (
        os.sep in program and shutil.which(str(where / program))
    ):
        return [
            Finding(
                "command",
                "refuse",
                f"{preset.path}: command: program "
                f"{literal(program)!r} not found (PATH, or {literal(str(where))})",
            )
        ]
    if spec.script and not command.file_record(where / spec.script):
        return [
            Finding(
                "command",
                "refuse",
                f"{preset.path}: command.script: no file {literal(str(where / spec.script))}",
            )
        ]
    out = [
        Finding("command", "ok", f"command: {literal(shlex.join(argv))} in {literal(str(where))}")
    ]
    if spec.block_reference:
        try:
            delta = command.check_block(
                where / spec.script, where / spec.block_reference, spec.block_marker
            )
        except InputError as exc:
            return [Finding("command", "refuse", str(exc))]
        changed = sum(ln.startswith(("+", "-")) for ln in delta[2:])
        out.append(
            Finding(
                "command",
                "ok",
                f"command block matches "
                f"{literal(spec.block_reference)}; platform delta: {changed} line(s)",
            )
        )
    if resume and folder.prereg.exists():
        try:
            frozen = read_prereg(folder).provenance
        except InputError:
            return out  # check_folder refuses it
        out += [
            Finding("code", "warn", f"--resume: {change}")
            for change in command.code_changes(frozen, preset, argv, where, folder.root)
        ]
    return out


def check_delta(
    preset: Preset, declared: tuple[str, ...] = (), resume: bool = False
) -> list[Finding]:
    """Hold the preset's recipe and platform to its banked comparator's, key by key.

    Only with `[verdict] delta_keys`, at a fresh launch: a key (preset/delta.py) differing outside
    them refuses, unless declared (`--declare-delta KEY`; the launch puts it in the ledger)."""
    from fontaine_tui.core.errors import InputError
    from fontaine_tui.core.preset.delta import against

    keys = preset.verdict.delta_keys
    if keys is None or resume:
        why = "--resume keeps the launch's deltas" if resume else "no verdict.delta_keys"
        return [Finding("delta", "refuse", f"--declare-delta: {why}")] if declared else []
    try:
        ref, found = against(preset)
    except InputError as exc:
        return [Finding("delta", "refuse", str(exc))]
    out = [
        Finding("delta", "refuse", f"--declare-delta {literal(k)}: not a differing key ({ref})")
        for k in declared
        if k in keys or k not in {key for key, _, _ in found}
    ]
    for key, ours, them in found:
        said = f"{key}: ours {ours}, theirs {them}"
        if key in keys:
            out.append(Finding("delta", "ok", f"delta {said} (verdict.delta_keys)"))
        elif key in declared:
            why = "declared at launch (--declare-delta), recorded in amendments.jsonl"
            out.append(Finding("delta", "warn", f"delta {said}: {why}", (key, ours, them)))
        else:
            out.append(Finding("delta", "refuse", said, (key, ours, them)))
    return out or [Finding("delta", "ok", f"recipe and platform match the banked {ref}")]


def check_all(
    preset: Preset,
    folder: RunFolder,
    telemetry: TelemetrySnapshot,
    *,
    resume: bool = False,
    yes_ram: bool = False,
    running_pid: int | None = None,
    cwd: Path | None = None,
    declared: tuple[str, ...] = (),
) -> list[Finding]:
    """Run every guard.

    A [command] preset's trainer is the user's: the folder and the command are checked, not the
    engine's modules, GPU and RAM needs."""
    if preset.command is not None:
        return [
            *check_folder(preset, folder, resume, running_pid),
            *check_command(preset, folder, resume, cwd),
            *check_delta(preset, declared, resume),
        ]
    return [
        *check_folder(preset, folder, resume, running_pid),
        *check_engine(),
        *check_delta(preset, declared, resume),
        *check_init(preset),
        *check_gpus(preset, telemetry),
        check_ram(preset, telemetry, yes_ram),
    ]


def refusal(findings: list[Finding]) -> str | None:
    """One line naming every refusal (keys differing from the comparator together), or None."""
    refused = [f.message for f in findings if f.level == "refuse" and not f.delta]
    keys = [f.delta[0] for f in findings if f.level == "refuse" and f.delta]
    if keys:
        refused.append(
            f"{', '.join(keys)} differ(s) from the banked comparator outside "
            "verdict.delta_keys (each above); --declare-delta KEY launches with it as a "
            "declared delta"
        )
    return "refusing to launch: " + "; ".join(refused) if refused else None


def declared(findings: list[Finding]) -> list[tuple[str, ...]]:
    """The keys declared at launch (--declare-delta) that differ: key, ours, theirs."""
    return [f.delta for f in findings if f.delta and f.level == "warn"]


def delta_lines(findings: list[Finding]) -> list[str]:
    """One line per key refused for differing from the comparator: key, ours, theirs."""
    return [f"  {f.message}" for f in findings if f.level == "refuse" and f.delta]
