"""`fontaine-tui notify test` sends one message to every notification destination.

It prints the outcome of each, its URL redacted. The destinations are in
core/notify/destinations.py.
"""

from __future__ import annotations

import argparse
import socket

from fontaine_tui.commands._args import examples
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.notify.delivery import Notifier
from fontaine_tui.core.notify.destinations import (
    Destination,
    config_path,
    load_destinations,
    make_destination,
)
from fontaine_tui.core.notify.payloads import Message

WAIT = 30.0  # seconds the test waits for every delivery


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "notify",
        description="Notifications go to the [[notify]] tables of "
        "$XDG_CONFIG_HOME/fontaine-tui/config.toml and to FONTAINE_NOTIFY=URL[,URL].",
        epilog=examples(
            "fontaine-tui notify test", "fontaine-tui notify test --url https://ntfy.sh/my-runs"
        ),
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    t = actions.add_parser(
        "test",
        help="send one test message and say what became of it",
        description="Send one message to every configured destination "
        "(or only --url) and print, per destination, delivered or failed. "
        "Exit 0 if all were delivered, 1 if any failed, 2 for bad config "
        "or no destination.",
        epilog=examples(
            "fontaine-tui notify test",
            "fontaine-tui notify test --level alert",
            "fontaine-tui notify test --url https://ntfy.sh/my-runs",
            exits="0 all delivered, 1 any failed, 2 bad config or no destination",
        ),
    )
    t.add_argument("--url", help="send to this URL only (the service told apart by the URL)")
    t.add_argument(
        "--level",
        default="info",
        choices=("info", "warn", "alert"),
        help="the test message's level (a destination whose least level is higher is skipped)",
    )
    t.set_defaults(func=run_test)


def run_test(args: argparse.Namespace) -> int:
    if args.url:
        dests = [make_destination(args.url, source="--url")]
    else:
        dests = load_destinations()
    if not dests:
        raise InputError(
            f"no notification destination: add a [[notify]] table with a url to "
            f"{config_path()}, or set FONTAINE_NOTIFY=URL"
        )
    message = Message(
        level=args.level,
        title="fontaine-tui test notification",
        text=f"A test message from `fontaine-tui notify test` on {socket.gethostname()}.",
        fields={"level": args.level},
    )
    chosen = [d for d in dests if d.accepts(args.level)]
    notifier = Notifier(chosen)
    notifier.send(message)
    notifier.close(WAIT)
    failures = {(f.destination, f.source): f.reason for f in notifier.failures}
    failed = 0
    for d in dests:
        outcome = _outcome(d, chosen, notifier, failures)
        failed += outcome.startswith("failed: ")
        print(f"{d.service:<8} {d.label}  {outcome}")
    return 1 if failed else 0


def _outcome(
    d: Destination,
    chosen: list[Destination],
    notifier: Notifier,
    failures: dict[tuple[str, str], str],
) -> str:
    """What became of the test message at `d`: skipped (its level), delivered, or failed (why)."""
    if d not in chosen:
        return f"skipped: its least level is {d.level}"
    if notifier.stats_of(d).delivered:
        return "delivered"
    return f"failed: {failures.get((d.label, d.source), f'not delivered within {WAIT:g} s')}"
