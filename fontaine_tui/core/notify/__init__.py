"""The notify wing: run events sent to chat and push services, in the background.

`destinations.py`: config.toml's `[[notify]]` tables and FONTAINE_NOTIFY, the service
  recognized from the URL.
`payloads.py`: a `Message` and each service's body.
`redact.py`: webhook tokens replaced by *** in whatever may be shown.
`delivery.py`: the `Notifier`, a daemon thread and a bounded queue per destination, retries
  with back-off, failures as warnings."""

from __future__ import annotations

from fontaine_tui.core.notify.delivery import Failure, Notifier, Policy, Stats
from fontaine_tui.core.notify.destinations import (
    LEVELS,
    Destination,
    config_path,
    detect_service,
    load_destinations,
    make_destination,
    parse_config,
)
from fontaine_tui.core.notify.payloads import Message
from fontaine_tui.core.notify.redact import redact_text, redact_url

__all__ = [
    "LEVELS",
    "Destination",
    "Failure",
    "Message",
    "Notifier",
    "Policy",
    "Stats",
    "config_path",
    "detect_service",
    "load_destinations",
    "make_destination",
    "parse_config",
    "redact_text",
    "redact_url",
]
