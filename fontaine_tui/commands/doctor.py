"""`fontaine-tui doctor PRESET`: the launch checks, printed, without launching."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fontaine_tui.commands._args import examples
from fontaine_tui.core.launch import guards
from fontaine_tui.core.text import gib, literal, mib
from fontaine_tui.core.verdict.seedbounds import preregistration_checks
from fontaine_tui.model.preflight import prepare

if TYPE_CHECKING:
    from fontaine_tui.core.host.nvml import GpuSample


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "doctor",
        description="Print the host checks `launch` would make (GPUs free, RAM, "
        "run folder, frozen bounds), the rule's bounds held to the seed noise of "
        "[verdict] seed_group, the telemetry and the engine command. "
        "Exit 0 when a launch would go ahead (warnings included), 1 when it would be refused.",
        epilog=examples(
            "fontaine-tui doctor my-preset",
            "fontaine-tui doctor my-preset --resume --output-dir r7",
            exits="0 a launch would go ahead, 1 it would be refused, 2 bad input",
        ),
    )
    p.add_argument("preset", help="preset name or path")
    p.add_argument("--resume", action="store_true", help="check as `launch --resume` would")
    p.add_argument("--output-dir", metavar="DIR", help="run folder to check")
    p.add_argument("--yes-ram", action="store_true", help="check as `launch --yes-ram` would")
    p.set_defaults(func=run)


def telemetry_lines(t, said: Sequence[str] = ()) -> list[str]:
    """The telemetry as lines, for doctor's header.

    Without GPUs, why (NVML's answer) is said once: not here when a check's message in `said`
    already quotes it."""
    out = []
    if t.gpus is None and not any(t.gpu_status in line for line in said):
        out.append(f"gpu: {t.gpu_status}")
    out += [_gpu_line(g) for g in t.gpus or ()]
    if t.ram is None:
        out.append(f"ram: unknown ({t.ram_reason})")
    else:
        out.append(f"ram: {gib(t.ram.available)} available of {gib(t.ram.total)} ({t.ram.source})")
    return out


def _gpu_line(g: GpuSample) -> str:
    """One GPU's reading: "?" for what NVML did not say, its compute processes if listed."""
    mem = (
        "?"
        if g.mem_used is None or g.mem_total is None
        else f"{mib(g.mem_used, 0, unit=False)}/{mib(g.mem_total, 0)}"
    )
    procs = (
        "not listed"
        if g.processes is None
        else ", ".join(f"pid {p.pid} {p.name}" for p in g.processes) or "none"
    )
    return (
        f"gpu {g.cuda_index}: {g.name} {g.uuid}: util {_known(g.util_pct, '{:.0f} %')}, "
        f"mem {mem}, {_known(g.power_w, '{:.0f} W')}, {_known(g.temp_c, '{:.0f} C')}; "
        f"compute processes: {procs}"
    )


def _known(value: float | None, form: str) -> str:
    """`value` in `form`, or "?" where it was not read."""
    return "?" if value is None else form.format(value)


def run(args: argparse.Namespace) -> int:
    preset, folder, findings, argv, _, telemetry = prepare(
        args.preset, args.output_dir, args.resume, args.yes_ram
    )
    print(f"preset {preset.name} ({literal(str(preset.path))}) sha256 {preset.sha256[:12]}")
    print(f"run folder {literal(str(folder.root))}")
    for line in telemetry_lines(telemetry, [f.message for f in findings]):
        print(line)
    seeds = [guards.Finding("seeds", lv, msg) for lv, msg in preregistration_checks(preset)]
    for f in [*findings, *seeds]:
        print(f"{f.level:>6}  {f.check:<6} {literal(f.message)}")
    who = "command" if preset.command is not None else "engine"  # a [command]: the user's
    print(f"{who}: {shlex.join(argv)}")
    why = guards.refusal(findings)
    print(why if why else "launch would go ahead")
    return 1 if why else 0
