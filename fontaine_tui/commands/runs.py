"""`fontaine-tui runs`: the babysit registry with live status (pid checked, log tail read)."""

from __future__ import annotations

import argparse

ORDER = 55


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("runs", help="list launched and attached runs with live status",
                       description="List the babysit registry ($FONTAINE_REGISTRY, else "
                       "$XDG_STATE_HOME/fontaine-tui/babysit.toml) with each run's live state.")
    p.add_argument("--update", action="store_true",
                   help="record observed exits (a registered pid that is gone) in the registry")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fontaine_tui.core.host.memory import hostname
    from fontaine_tui.core.launch.registry import Registry, live_status
    from fontaine_tui.core.verdict.prereg import utc_iso

    registry = Registry()
    entries = registry.entries()
    if not entries:
        print(f"no runs in {registry.path}")
        return 0
    host = hostname()
    rows = [live_status(e, host) for e in entries]
    header = ("NAME", "STATE", "STEP", "ATTEMPTS", "PID", "HOST", "LAUNCHED", "RUN FOLDER",
              "DETAIL")
    table = [header] + [
        (s.entry.name, s.state, "?" if s.last_step is None else str(s.last_step),
         "?" if s.attempts is None else str(s.attempts),
         str(s.entry.pid or "-"), s.entry.host, s.entry.launched_at[:19], s.entry.run_dir,
         s.detail) for s in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header) - 1)]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1])
    if args.update:
        import time

        changed = [s for s in rows if s.entry.status in ("running", "attached")
                   and s.state not in ("running", "remote")]
        for s in changed:
            registry.update(s.entry.run_dir, s.entry.host, status=s.state,
                            last_step=s.last_step or s.entry.last_step,
                            updated_at=utc_iso(time.time()))
        print(f"{len(changed)} exit(s) recorded in {registry.path}")
    return 0
