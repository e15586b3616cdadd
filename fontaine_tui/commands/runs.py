"""`fontaine-tui runs` checks every registered run live, here and on other hosts.

core/runs/fleet.py checks the hosts in parallel, each within a deadline. A host that does
not answer shows its last good reading and its age.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

from fontaine_tui.commands._args import examples, ssh_config
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.runs.fleet import Fleet, FleetRow, control_dir, host_envs, row_cells
from fontaine_tui.core.runs.registry import Entry, LiveStatus, Registry, live_statuses
from fontaine_tui.core.ssh.destination import check_destination
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict.prereg import utc_iso

RUNS_SCHEMA = "fontaine-tui/runs/1"  # each line of `runs -j` (docs/json.md)

Local = dict[tuple[str, str], LiveStatus]  # this host's own readings, by (host, run folder)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "runs",
        description="List the babysit registry ($FONTAINE_REGISTRY, else "
        "$XDG_STATE_HOME/fontaine-tui/babysit.toml) with each run's live state: "
        "runs of this host read directly, other hosts' over one SSH connection "
        "per host, all at once, within --timeout.",
        epilog=examples(
            "fontaine-tui runs",
            "fontaine-tui runs -j",
            "fontaine-tui runs --update",
            "fontaine-tui --ssh-config ~/.ssh/lab runs --timeout 5",
        ),
    )
    p.add_argument(
        "--update",
        action="store_true",
        help="record observed exits (a registered pid that is gone) in the registry",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=1.8,
        metavar="S",
        help="how long the table waits for the hosts, however slow one is (default 1.8)",
    )
    p.add_argument("-j", "--json", action="store_true", help="one JSON object per run")
    ssh_config(p)
    p.set_defaults(func=run)


TABLE_HEADER = (
    "NAME",
    "HOST",
    "STATE",
    "STEP",
    "S/STEP",
    "PROBE",
    "READ",
    "GPU-H",
    "WARN",
    "ATT",
    "CHECKED",
    "RUN FOLDER",
)


def run(args: argparse.Namespace) -> int:
    if not args.timeout > 0:
        raise InputError(f"--timeout: expected a positive number of seconds, got {args.timeout}")
    registry = Registry()
    entries = registry.entries()
    if not entries:
        print(f"no runs in {registry.path}")
        return 0
    host = hostname()
    check_hosts(entries, host, registry)
    options = ("-F", args.ssh_config) if args.ssh_config else ()
    fleet = Fleet(
        registry.path.parent / "fleet.json",
        control_dir(),
        host,
        options,
        args.timeout,
        envs=host_envs(),
    )
    with ThreadPoolExecutor(max_workers=1) as pool:
        # this host's runs (pid, attempts; a Slurm job: its scheduler) beside the other hosts
        mine = pool.submit(live_statuses, entries, host, args.timeout)
        rows, down = fleet.check(entries)
        local = mine.result()
    if args.json:
        print_json(rows, local)
    else:
        print_table(rows, local, down, time.time())
    if args.update:
        record_exits(registry, local)
    return 0


def check_hosts(entries: Sequence[Entry], host: str, registry: Registry) -> None:
    """Refuse a registered host that ssh would read as an option, before any is asked."""
    for e in entries:
        if e.host != host:
            check_destination(e.host, f"{registry.path}: run {e.name!r}: host")


def print_json(rows: list[FleetRow], local: Local) -> None:
    """One `runs -j` object per row; this host's own reading overrides the fleet's state."""
    for r in rows:
        doc = {"schema": RUNS_SCHEMA, **asdict(r)}
        if (s := local.get((r.host, r.run_dir))) is not None:
            doc.update(state=s.state, attempts=s.attempts, detail=s.detail)
        print(json.dumps(doc, default=str))


def table_row(r: FleetRow, s: LiveStatus | None, now: float) -> tuple[str, ...]:
    """The cells of one run: the fleet's row, with this host's state and attempts if read."""
    step, step_s, probe, read, gpu_h, warn, checked = row_cells(r, now)
    cells = (
        r.name,
        r.host,
        r.state if s is None else s.state,
        step,
        step_s,
        probe,
        read,
        gpu_h,
        warn,
        "-" if s is None or s.attempts is None else str(s.attempts),
        checked,
        r.run_dir,
    )
    return tuple(literal(str(c)) for c in cells)


def print_table(rows: list[FleetRow], local: Local, down: dict[str, str], now: float) -> None:
    """The aligned table (the run folder last, unpadded), then each host that did not answer."""
    table = [TABLE_HEADER, *(table_row(r, local.get((r.host, r.run_dir)), now) for r in rows)]
    widths = [max(len(t[i]) for t in table) for i in range(len(TABLE_HEADER) - 1)]
    for t in table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths, strict=False)) + "  " + t[-1])
    for h, why in down.items():
        print(literal(f"{h}: {why}; its rows are its last good reading"))


def record_exits(registry: Registry, local: Local) -> None:
    """`--update`: write each observed exit of a registered running run into the registry."""
    # a foreign run gone quiet may yet write again: not an exit
    changed = [
        s
        for s in local.values()
        if s.entry.status in ("running", "attached")
        and s.state not in ("running", "remote", "quiet")
    ]
    for s in changed:
        registry.update(
            s.entry.run_dir,
            s.entry.host,
            status=s.state,
            last_step=s.last_step or s.entry.last_step,
            updated_at=utc_iso(time.time()),
        )
    print(f"{len(changed)} exit(s) recorded in {registry.path}")
