"""`fontaine-tui babysit [RUN...]` watches detached runs without a console.

It polls at the preset's [babysit] cadence and notifies (model/watchman.py). `--print-unit`
prints a systemd user unit that runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

from fontaine_tui.commands._args import examples, ssh_config
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.runs.registry import Registry
from fontaine_tui.core.text import literal
from fontaine_tui.model.watchman import watch

UNIT_ENV = ("FONTAINE_REGISTRY", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "babysit",
        description="Watch runs without a console: each run's warnings, probe reads, babysit "
        "polls ([babysit] in its preset: babysit.jsonl in the run folder) and the final "
        "verdict go to the notification destinations (config.toml [[notify]], "
        "FONTAINE_NOTIFY, the preset's [[notify]]). RUN is a registered run's name, a run "
        "folder or [user@]host:/path; none: every live run of the registry, read again for "
        "runs launched since. Leave it in tmux, or as a systemd user service (--print-unit).",
        epilog=examples(
            "fontaine-tui babysit",
            "fontaine-tui babysit r7 gpu1:/runs/r8 --poll 30",
            "fontaine-tui babysit --once",
            "fontaine-tui babysit --print-unit > babysit.service",
            exits="0 the named runs ended (or Ctrl-C), 1 a named run could not be "
            "watched, 2 bad input",
        ),
    )
    p.add_argument("runs", nargs="*", metavar="RUN", help="run name, folder or host:/path")
    p.add_argument(
        "--poll",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds between looks at each run (default 10)",
    )
    p.add_argument(
        "--rescan",
        type=float,
        default=30.0,
        metavar="S",
        help="with no RUN: seconds between reads of the registry (default 30)",
    )
    p.add_argument(
        "--once", action="store_true", help="one look at each run, then exit (from cron)"
    )
    ssh_config(p)
    p.add_argument(
        "--print-unit",
        action="store_true",
        help="print a systemd user unit that runs this babysitter, and exit",
    )
    p.set_defaults(func=run)


def _quote(text: str) -> str:
    """One word of a systemd unit line: double-quoted, with \\ " % $ escaped."""
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text.replace("%", "%%").replace("$", "$$") + '"'


def unit(
    args: argparse.Namespace, env: dict[str, str] | None = None, python: str = sys.executable
) -> str:
    env = dict(os.environ if env is None else env)
    argv = [
        python,
        "-m",
        "fontaine_tui",
        "babysit",
        "--poll",
        f"{args.poll:g}",
        *(["--ssh-config", os.path.abspath(args.ssh_config)] if args.ssh_config else []),
        *args.runs,
    ]
    lines = [
        "# fontaine-tui babysitter: polls and notifications for detached runs.",
        "# Install it as a systemd user service:",
        "#   fontaine-tui babysit --print-unit > ~/.config/systemd/user/fontaine-babysit.service",
        "#   systemctl --user daemon-reload && systemctl --user enable --now fontaine-babysit",
        '#   loginctl enable-linger "$USER"   # keep it running after you log out',
        "# FONTAINE_NOTIFY is not copied here (a webhook URL is a secret): put destinations",
        "# in config.toml's [[notify]], or in a file named by EnvironmentFile=.",
        "[Unit]",
        "Description=fontaine-tui babysitter (polls and notifications for detached runs)",
        "Wants=network-online.target",
        "After=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        "ExecStart=" + " ".join(_quote(a) for a in argv),
        *(f"Environment={_quote(f'{k}={env[k]}')}" for k in UNIT_ENV if env.get(k)),
        "Environment=PYTHONUNBUFFERED=1",
        "Restart=on-failure",
        "RestartSec=30",
        "",
        "[Install]",
        "WantedBy=default.target",
    ]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    for name in ("poll", "rescan"):
        if not getattr(args, name) > 0:
            raise InputError(
                f"--{name}: expected a positive number of seconds, got {getattr(args, name)}"
            )
    if args.print_unit:
        sys.stdout.write(unit(args))
        return 0

    def say(text: str) -> None:
        print(literal(text), flush=True)  # one line, whatever a run's name holds

    options = ("-F", args.ssh_config) if args.ssh_config else ()
    registry = Registry()

    def stop(signum: int, frame: object) -> None:  # systemd's stop is a SIGTERM
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        return asyncio.run(
            watch(
                args.runs,
                registry,
                hostname(),
                args.poll,
                say,
                args.rescan,
                once=args.once,
                ssh_options=options,
            )
        )
    except KeyboardInterrupt:
        say("babysit: stopped")
        return 0
