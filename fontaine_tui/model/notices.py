"""A run's events as notifications (core/notify): its launch, polls, reads, warnings and end.

The events are the launch, each babysit poll (the first one is the document's first-poll
summary), each probe's read as it stands (PROVISIONAL until the endpoint), each new warning
(the GPU-hours gate among them), each alert the trainer raised, an incident (an attempt that
ended before the endpoint, with its cause), a stop on the preset's stop_on_lock gate, and the final verdict. The final verdict has both rules and the per-dataset
breakdown (fields for Slack and Discord, lines of the text for the others).

Sending never blocks (the notifier's own threads deliver). What failed is said at the end,
its URLs redacted. model/babysitter.py decides when to send.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.notify.delivery import Notifier
from fontaine_tui.core.notify.destinations import Destination, load_destinations
from fontaine_tui.core.notify.payloads import Message
from fontaine_tui.core.preset.checks import BY_INSTRUMENT, HEALTHY
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.preset.watching import preset_destinations
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.runfolder import PREREG
from fontaine_tui.core.secrets import redact_text
from fontaine_tui.core.verdict import blind
from fontaine_tui.core.verdict.record import Verdict
from fontaine_tui.core.verdict.text import headline, signed
from fontaine_tui.core.watch.alerts import RunWarning
from fontaine_tui.core.watch.babysit import poll_text

DRAIN_S = 10.0  # how long the end of a watch waits for the last deliveries
TITLES = {
    "gpu-hours": "GPU-hours gate",
    "exited-early": "run ended early",
    "nan-loss": "non-finite loss",
    "ram": "RAM pressure",
    "stall": "stall",
    "ledger": "amendment ledger broken",
}


def prereg_file_sha256(folder: str) -> str:
    """The sha256 of `folder`'s prereg.json when this host can read it, else ""."""
    try:
        return hashlib.sha256(read_whole(Path(folder) / PREREG)).hexdigest()
    except (OSError, InputError):
        return ""


def _level(v: Verdict) -> str:
    return "info" if v.verdict == HEALTHY else "alert" if v.verdict == BY_INSTRUMENT else "warn"


def secret_redactor(
    preset: Preset | None, env: Mapping[str, str] | None = None
) -> Callable[[str], str]:
    """What hides every credential in a text (core/secrets.py).

    That is every notification URL this process knows and its secret pieces, and all else the
    secrets policy names. The URLs are config.toml's, FONTAINE_NOTIFY's and the preset's [[notify]]: a trainer's
    alert may quote one (its own environment dump, a failed post of its own), or a token of
    its own, and its words reach the panel, the plain report, babysit.jsonl and the
    notifications."""
    env = os.environ if env is None else env
    try:
        found = load_destinations(env)
    except InputError:  # said where the notices are configured
        found = []
    if preset is not None and preset.notify:
        found += preset_destinations(preset.notify, env)[0]
    pairs = [(u, d.service) for d in found for u in (d.url, d.post_url) if u]
    return lambda text: redact_text(text, pairs)


def _per_dataset(metric: str, breakdown: Mapping[str, str]) -> str:
    """Each dataset's read as lines of text, for the channels with no fields ("" for none)."""
    if not breakdown:
        return ""
    lines = (f"  {name}: {value}" for name, value in breakdown.items())
    return "\n".join([f"per dataset (the bounds are {metric}'s):", *lines])


def _added_by(
    preset: Preset, env: Mapping[str, str], say: Callable[[str], None], known: set[str]
) -> list[Destination]:
    """The preset's [[notify]] destinations not `known` already; each one left off is said."""
    extra, off = preset_destinations(preset.notify, env)
    for line in off:
        say(f"warn: {line}")
    return [d for d in extra if d.url not in known]


class RunNotices:
    """The notifications of one watched run; `None` destinations: nothing is sent."""

    def __init__(self, notifier: Notifier, run: str) -> None:
        self.notifier, self.run = notifier, run

    @classmethod
    def configured(
        cls,
        run: str,
        say: Callable[[str], None],
        preset: Preset | None = None,
        env: Mapping[str, str] | None = None,
    ) -> RunNotices | None:
        """The notices from the user's config.toml, FONTAINE_NOTIFY and the preset's [[notify]].

        A bad destination is said, not fatal (the run is already going).
        """
        env = os.environ if env is None else env
        try:
            destinations = load_destinations(env)
        except InputError as exc:
            say(f"warn: notifications from the user's config off: {exc}")
            destinations = []
        if preset is not None and preset.notify:
            destinations += _added_by(preset, env, say, {d.url for d in destinations})
        return cls(Notifier(destinations), run) if destinations else None

    def _send(
        self, level: str, title: str, text: str, step: int | None = None, **fields: str
    ) -> None:
        self.notifier.send(
            Message(
                level=level, title=title, text=text, run=self.run, step=step, fields=dict(fields)
            )
        )

    def launched(self, preset: str, folder: str, what: str, sha: str) -> None:
        """`what`: the process as the user knows it ("engine pid N", "slurm job N").

        When prereg.json is readable here, its own sha256 goes out whole: with the channel's
        history, a sealed bundle's prereg.json is checked to be the one frozen at launch.
        """
        frozen = prereg_file_sha256(folder)
        self._send(
            "info",
            f"{self.run}: launched",
            f"preset {preset}, {what} in {folder} (prereg sha256 {sha[:12]})"
            + (f"\nprereg.json sha256 {frozen}" if frozen else ""),
            0,
            preset=preset,
            **({"prereg.json sha256": frozen} if frozen else {}),
        )

    def sealed(self, bundle: str, digest: str) -> None:
        """A bundle sealed: its digest, the sha256 of its MANIFEST.json, whole."""
        self._send(
            "info",
            f"{self.run}: sealed",
            f"bundle {bundle}\ndigest {digest}",
            None,
            digest=digest,
        )

    def probe(self, step: int, verdict: Verdict, hidden: bool = False) -> None:
        """A probe's read as it stands; a `hidden` one as BLINDED (core/verdict/blind.py)."""
        self._send(
            "info",
            f"{self.run}: probe at step {step}",
            f"verdict: {blind.blinded_headline(verdict) if hidden else headline(verdict)}",
            step,
            verdict=blind.BLINDED if hidden else verdict.label,
        )

    def warning(self, w: RunWarning, step: int | None) -> None:
        title = TITLES.get(w.rule, w.rule)
        self._send(w.severity, f"{self.run}: {title}", w.message, step)

    def trainer_alert(self, w: RunWarning, step: int | None) -> str:
        """An alert the trainer raised, at its level; returns the words sent.

        The trainer's words are its own: every destination's URL and secret pieces are
        redacted from them, as from everything this program says."""
        words = self.notifier.redact(w.message)
        self._send(w.severity, f"{self.run}: trainer alert", words, step, alert=w.severity)
        return words

    def poll(self, rec: Mapping[str, object], n: int) -> None:
        kind = "first poll" if rec.get("kind") == "first" else f"poll {n}"
        step = rec.get("step")
        self._send(
            str(rec.get("level", "info")),
            f"{self.run}: {kind}",
            poll_text(rec),
            step if isinstance(step, int) else None,
            verdict=str(rec.get("verdict")),
        )

    def incident(self, attempt: int, cause: str, text: str, step: int | None) -> None:
        self._send(
            "alert", f"{self.run}: incident: attempt {attempt} {cause}", text, step, cause=cause
        )

    def restarting(self, attempt: int, said: str, step: int | None) -> None:
        """A restart the preset's [recovery] makes after attempt `attempt` ended (its line)."""
        self._send("warn", f"{self.run}: attempt {attempt} ended: {said}", said, step)

    def gate_stopped(self, attempt: int, cause: str, text: str, step: int | None) -> None:
        """An attempt the watcher stopped on the preset's stop_on_lock gate (its cause said)."""
        self._send(
            "info", f"{self.run}: attempt {attempt} stopped: {cause}", text, step, cause=cause
        )

    def final(self, verdict: Verdict, text: str, exit_line: str, hidden: bool = False) -> None:
        """Send the final verdict, with each dataset's read.

        Each dataset's read is a field for Slack and Discord, and a line of the text elsewhere
        (generic, ntfy, apprise: `Message.detail`). A `hidden` read (a blinded run that ended
        before its endpoint) is sent as BLINDED, without the datasets' reads.
        """
        label = blind.BLINDED if hidden else verdict.label
        data = {} if hidden else verdict.datasets
        breakdown = {name: f"{verdict.read} {signed(x)}" for name, x in data.items()}
        fields = {"verdict": label}
        fields.update({f"dataset {name}": value for name, value in breakdown.items()})
        self.notifier.send(
            Message(
                level="info" if hidden else _level(verdict),
                title=f"{self.run}: VERDICT {label}",
                text=f"{exit_line}\n{text}",
                run=self.run,
                step=verdict.read_step,
                fields=fields,
                detail=_per_dataset(verdict.metric, breakdown),
            )
        )

    @property
    def failures(self) -> list[str]:
        return [
            f"notification to {f.destination} failed: {f.reason}" for f in self.notifier.failures
        ]

    def close(self, drain_s: float = DRAIN_S) -> list[str]:
        """Wait for the deliveries, at most `drain_s`, and return a line per problem.

        There is a line per delivery that failed, and one for what was still queued.
        """
        drained = self.notifier.close(drain_s)
        left = self.notifier.pending()
        if not drained and left:
            return [f"warn: {line}" for line in self.failures] + [
                f"warn: {left} notification(s) not delivered within {drain_s:g} s (dropped)"
            ]
        return [f"warn: {line}" for line in self.failures]
