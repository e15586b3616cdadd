"""The trainer's own alerts as warnings: each the words it raised, at its level.

A trainer raises an alert itself (a `{"kind": "alert"}` record, `trackio.alert`, W&B's
`run.alert`); the store keeps each once (core/log/store.py). The newest SHOWN are warnings in
the panel, each under a rule named by what it says (`trainer-alert:<digest>`), so a watcher
that reads the log again, or another watcher of the run, knows it as the same alert and the
babysitter posts it once (model/babysitter.py). Alert records that could not be read are one
warning that counts them. An alert is health: no rule of the verdict reads it.

While the read is blinded, an alert whose title or text holds a number or names a rule's
metric is shown without its words: a trainer's alert may quote the number the blind hides.

The same rule, and the same masking of credentials, owns the trainer's other words a
watcher shows: a log's event records (`event_words`: the plain report's event lines and the
console's events panel) and the lines it printed to engine.out.log (`output_lines`: the
console's engine.out.log pane). One rule, so the surfaces cannot drift apart.

The rule itself (`quotes_read`, `rule_metrics`, `HIDDEN_WORDS`) is core/verdict/blindwords.py's,
a leaf every wing that shows the trainer's words imports (an exit's words: core/run/exits.py).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from types import MappingProxyType

from fontaine_tui.core.log.records import NO_STEP, Alert, Event
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.secrets import mask_text
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict.blindwords import HIDDEN_WORDS, quotes_read
from fontaine_tui.core.watch.alerts import RunWarning

RULE = "trainer-alert"  # each alert's rule: RULE:<digest>
BAD_RULE = "trainer-alert-unread"
SHOWN = 3  # the newest alerts shown as warnings


def rule_of(alert: Alert) -> str:
    """The alert's rule name: the same for the same alert however often it is read."""
    said = repr((alert.step, alert.time, alert.level, alert.title, alert.text))
    return f"{RULE}:{hashlib.sha256(said.encode('utf-8', 'replace')).hexdigest()[:12]}"


def is_alert_rule(rule: str) -> bool:
    """Whether `rule` is one trainer alert's (not the count of unread ones)."""
    return rule.startswith(RULE + ":")


def may_quote(alert: Alert, metrics: Sequence[str]) -> bool:
    """Whether the alert's words may quote a blinded read (`quotes_read`)."""
    return quotes_read(f"{alert.title} {alert.text}", metrics)


def alert_words(
    alert: Alert,
    metrics: Sequence[str] = (),
    blinded: bool = False,
    redact: Callable[[str], str] = mask_text,
) -> str:
    """The alert in words, as the panel, the plain report and a notification say it.

    Blinded, an alert whose words may quote the read (`may_quote`) keeps only its level and
    step. `redact` hides the credentials in the trainer's words: every one the secrets policy
    names (core/secrets.py), and with model/notices.py's secret_redactor the notification
    URLs this process knows as well."""
    where = "" if alert.step == NO_STEP else f" at step {alert.step}"
    if blinded and may_quote(alert, metrics):
        return f"the trainer raised an alert{where}; {HIDDEN_WORDS}"
    text = f": {literal(redact(alert.text))}" if alert.text else ""
    return f"the trainer's alert{where}: {literal(redact(alert.title))}{text}"


def event_words(
    event: Event,
    metrics: Sequence[str] = (),
    blinded: bool = False,
    redact: Callable[[str], str] = mask_text,
) -> tuple[str, str]:
    """(name, detail) of a log event in words, literal: "best_model", "new best ...".

    Blinded, an event whose name or detail may quote the read (`quotes_read`) keeps its name
    only where the name alone quotes nothing ("event" else); its detail is hidden as an
    alert's words are. `redact` masks the credentials in both (as `alert_words`)."""
    name = literal(redact(event.event))
    if blinded and quotes_read(f"{event.event} {event.detail}", metrics):
        return ("event" if quotes_read(event.event, metrics) else name), HIDDEN_WORDS
    return name, literal(redact(event.detail))


def output_lines(
    lines: Sequence[str], metrics: Sequence[str] = (), blinded: bool = False
) -> tuple[list[str], int]:
    """(the lines shown, how many were hidden) of what the trainer printed.

    The lines are given already masked (core/secrets.py, where they were read: the
    session's `apply_tail`); blinded, a line that may quote the read (`quotes_read`) is left
    out and counted, as an alert's words are hidden."""
    if not blinded:
        return list(lines), 0
    shown = [line for line in lines if not quotes_read(line, metrics)]
    return shown, len(lines) - len(shown)


def trainer_warnings(
    store: RunStore,
    metrics: Sequence[str],
    blinded: bool,
    now: float,
    redact: Callable[[str], str] = mask_text,
) -> list[RunWarning]:
    """The newest SHOWN alerts, and the count of unread alert records, as warnings.

    An alert is seen since the time it was logged (`now` when it has none)."""
    out = [
        RunWarning(
            rule_of(a),
            a.level,
            a.time if math.isfinite(a.time) else now,
            alert_words(a, metrics, blinded, redact),
            MappingProxyType({"step": float(a.step), "logged": a.time}),
        )
        for a in store.alerts[-SHOWN:]
    ]
    if store.alert_count > SHOWN:
        out.append(
            RunWarning(
                RULE,
                "info",
                now,
                f"{store.alert_count} alerts raised by the trainer; the newest {SHOWN} shown",
                MappingProxyType({"alerts": float(store.alert_count)}),
            )
        )
    if store.bad_alert_count:
        first = store.bad_alerts[0]
        out.append(
            RunWarning(
                BAD_RULE,
                "warn",
                now,
                f"{store.bad_alert_count} alert record(s) not relayed; first: "
                f"{store.where(first.line) if first.line else 'a record'}: {redact(first.reason)}",
                MappingProxyType({"unread": float(store.bad_alert_count)}),
            )
        )
    return out
