"""What the app's actions do, kept out of app.py: review, export, stepping, attach, palette."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import SystemCommand

from fontaine_tui.core.verdict import export as exporter
from fontaine_tui.core.verdict import review as reviewer
from fontaine_tui.core.verdict.chart import probes_chart
from fontaine_tui.core.verdict.rules import Verdict
from fontaine_tui.model.session import RunView, Session
from fontaine_tui.widgets.safe import notify

if TYPE_CHECKING:
    from fontaine_tui.app import FontaineApp


def step_read(view: RunView, current: int | None, delta: int) -> int | None:
    """The probe step `delta` reads away from `current` (None: the latest), clamped."""
    steps = [v.read_step for v in view.verdicts if v.read_step is not None]
    if not steps:
        return None
    here = current if current in steps else view.latest.read_step
    i = steps.index(here) if here in steps else len(steps) - 1
    return steps[max(0, min(len(steps) - 1, i + delta))]


def shown_verdict(app: FontaineApp) -> Verdict | None:
    view = app.view
    return None if view is None else view.verdict_at(app.read_step)


def review(app: FontaineApp, action: str, note: str = "") -> str:
    """Append accept / flag / note for the read on screen; returns the status line."""
    v = shown_verdict(app)
    folder = app.session.folder
    if v is None or folder is None:
        msg = "review needs a run folder (none for this source)"
        notify(app, msg, severity="error")
        return msg
    path = folder / "review.jsonl"
    try:
        entry = reviewer.append(path, action, v, note, clock=app.clock)
    except OSError as exc:
        msg = f"{path}: cannot append ({exc.strerror})"
        notify(app, msg, severity="error")
        return msg
    check = reviewer.verify(path)
    chain = "chain intact" if check.ok else f"CHAIN BROKEN: {check.reason}"
    msg = (f"review.jsonl line {entry.line}: {action} {v.verdict} at step {v.read_step}"
           f"{' (provisional)' if v.provisional else ''}; {check.lines} line(s), {chain}")
    notify(app, msg, severity="information" if check.ok else "error")
    return msg


async def export(app: FontaineApp) -> str:
    v = shown_verdict(app)
    folder = app.session.folder
    view = app.view
    if v is None or folder is None or view is None:
        msg = "export needs a run folder (none for this source)"
        notify(app, msg, severity="error")
        return msg
    spec = probes_chart(view.store, view.preset, view.verdicts, v, app.scaled)
    result = await asyncio.to_thread(exporter.export, folder, v, spec)
    msg = f"wrote {result.verdict_path}" + (
        f" and {result.chart_path}" if result.chart_path else f"; {result.chart_message}")
    notify(app, msg, severity="information" if result.chart_path else "warning", timeout=8)
    return msg


@dataclass(frozen=True, slots=True)
class RunEntry:
    name: str
    folder: str
    pid: int | None
    state: str
    launched: str


def registry_entries(app: FontaineApp) -> list[RunEntry]:
    """Registry rows, whatever shape the registry hands them in."""
    reg = app.registry
    if reg is None:
        app.registry_reason = "no registry given"
        return []
    try:
        items = reg.entries() if hasattr(reg, "entries") else list(reg)  # type: ignore[attr-defined]
    except Exception as exc:  # a broken registry file is shown, not raised
        app.registry_reason = f"registry unreadable: {exc}"
        return []
    out = []
    for e in items:
        alive = getattr(e, "alive", None)
        state = str(getattr(e, "state", "") or ("alive" if alive else "gone" if alive is False
                                                 else "?"))
        out.append(RunEntry(str(getattr(e, "name", "")), str(getattr(e, "folder", "")),
                            getattr(e, "pid", None), state,
                            str(getattr(e, "launched_at", "") or "")))
    app.registry_reason = "the registry is empty"
    return out


def attach_folder(app: FontaineApp, folder: Path) -> None:
    """Point the console at another run folder (from the runs list)."""
    from fontaine_tui.core.follow.local import LocalRun
    from fontaine_tui.core.runfolder import RunFolder

    preset = app.session.preset
    try:
        from fontaine_tui.core.verdict.prereg import read_prereg

        preset = read_prereg(RunFolder(folder)).frozen_preset(str(folder / "prereg.json"))
    except Exception as exc:  # keep the current preset, say why
        notify(app, f"{folder}: using preset {preset.name} ({exc})", severity="warning")
    old = app.session.source
    app.session = Session(LocalRun(folder), preset, "attach", None, folder)
    app.run_worker(old.close(), group="close")  # type: ignore[attr-defined]
    app.refresh_ledger()
    app.read_step = None
    app.tail_total = 0
    app.view = app.session.view()
    app.start_following()
    app.switch_mode("monitor")


def palette_commands(app: FontaineApp) -> Iterator[SystemCommand]:
    """The console's actions in the command palette (ctrl+p)."""
    yield SystemCommand("Monitor mode", "Progress, losses, telemetry, engine output",
                        lambda: app.switch_mode("monitor"))
    yield SystemCommand("Probes mode", "Delta chart and probes table",
                        lambda: app.switch_mode("probes"))
    yield SystemCommand("Verdict mode", "Both rules, combined verdict, ledger",
                        lambda: app.switch_mode("verdict"))
    yield SystemCommand("Runs mode", "Runs in the babysit registry",
                        lambda: app.switch_mode("runs"))
    yield SystemCommand("Toggle raw / scale-adjusted", "Units of the probes chart",
                        app.action_toggle_scale)
    yield SystemCommand("Accept the shown verdict", "Append 'accept' to review.jsonl",
                        lambda: app.action_review("accept"))
    yield SystemCommand("Flag the shown verdict", "Append 'flag' to review.jsonl",
                        lambda: app.action_review("flag"))
    yield SystemCommand("Annotate the shown verdict", "Write a note into review.jsonl",
                        app.action_note)
    yield SystemCommand("Export verdict", "verdict.json and the overlay chart PNG",
                        app.action_export)
    yield SystemCommand("Key bindings", "List every binding", app.action_help)
