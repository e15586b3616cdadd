"""What the console shows besides the charts: probe rows, progress, pace, status, events.

That is probe rows, progress, pace, GPU-hours, run status, events and evidence. There is no
UI here. The widgets and the plain output both read it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from fontaine_tui.core.log.records import Event, Probe
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import Preset, gate_of
from fontaine_tui.core.run.endpoint import planned_steps
from fontaine_tui.core.run.evidence import seen_conflicts, seen_odd_values
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict import blind
from fontaine_tui.core.verdict.record import Verdict
from fontaine_tui.core.watch import alerts
from fontaine_tui.core.watch.traineralerts import event_words

MEDIAN_WINDOW = 100  # recent steps in the s/step median


ENGINE_FIELDS = frozenset(("eval_chunk_mae", "train_chunk_mae", "eval_ar_ce"))


@dataclass(frozen=True, slots=True)
class ProbeRow:
    step: int
    eval_mae: float
    delta: float | None
    train_mae: float
    train_delta: float | None
    ar_ce: float
    breakdown: Mapping[str, float] = field(default_factory=dict)
    metric: str = "eval_chunk_mae"  # the rule's metric, and its value at this probe
    value: float = math.nan
    read: str = "delta"  # what `delta` holds: the delta, or the level
    # the engine's probe fields this probe logged (ENGINE_FIELDS): another trainer's has none
    logged: frozenset[str] = ENGINE_FIELDS


def probe_rows(probes: Mapping[int, Probe], verdicts: Sequence[Verdict]) -> list[ProbeRow]:
    """One row per probe the evidence gate shows; deltas as the verdict read at each step.

    `probes` are core/run/evidence.py's `seen_probes`: none while the read is hidden."""
    by_step = {v.read_step: v for v in verdicts}
    rows = []
    for s in sorted(probes):
        p = probes[s]
        delta, train_delta, metric, read = _read_at(by_step.get(s))
        rows.append(
            ProbeRow(
                s,
                p.eval_chunk_mae,
                delta,
                p.train_chunk_mae,
                train_delta,
                p.eval_ar_ce,
                p.breakdown,
                metric,
                p.value(metric),
                read,
                frozenset(f for f in ENGINE_FIELDS if p.has(f)),
            )
        )
    return rows


def _read_at(v: Verdict | None) -> tuple[float | None, float | None, str, str]:
    """The verdict's read at a probe: (delta, train delta, metric, read); defaults where none."""
    if v is None:
        return None, None, "eval_chunk_mae", "delta"
    train_delta = v.corroboration.get("train_delta")
    return v.delta, train_delta if isinstance(train_delta, float) else None, v.metric, v.read


@dataclass(frozen=True, slots=True)
class Progress:
    step: int
    total: int
    last_step_s: float | None
    median_step_s: float | None
    eta_s: float | None
    gpu_hours: float | None
    gpu_hours_gate: float | None
    world_size: int
    data_frac: float | None  # share of recent step time spent waiting for data
    data_starved: bool = False  # the starvation rule's data-wait test holds (alerts.py)


def _finite(values: Sequence[float]) -> list[float]:
    return [v for v in values if math.isfinite(v)]


def progress(store: RunStore, preset: Preset, in_force: int | None = None) -> Progress:
    """Step, pace and ETA, toward the steps planned with the endpoint `in_force`.

    `gpu_hours` is left None here. The console fills it in from the gate rule in
    core.watch.alerts, so the header and the gate warning count the same hours.
    """
    total = planned_steps(preset, in_force)
    step = store.last_step
    recent = _finite(store.columns["step_s"][-MEDIAN_WINDOW:])
    last = recent[-1] if recent else None
    median = statistics.median(recent) if recent else None
    eta = max(0, total - step) * median if median is not None else None
    world = next((m.world_size for m in reversed(store.metas) if m.world_size), 1)
    gate = gate_of(preset.gates, "gpu_hours")
    return Progress(
        step,
        total,
        last,
        median,
        eta,
        None,
        gate,
        world,
        _data_share(store, recent),
        alerts.data_starved(store, preset.gates) is not None,
    )


def _data_share(store: RunStore, recent: list[float]) -> float | None:
    """The share of the recent steps' time spent waiting for data; None where not logged."""
    data = _finite(store.columns["data_s"][-MEDIAN_WINDOW:])
    return sum(data) / sum(recent) if data and recent and sum(recent) > 0 else None


def recipe_steps(preset: Preset) -> int:
    """recipe.steps (the preset loader checked it is an integer); 0 when absent."""
    return planned_steps(preset)


def duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "—"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{sec:02d}s"


def gpu_hours_text(p: Progress) -> str:
    """Used / gate, e.g. `GPU-h 3.20/12`; `GPU-h —/12 (no GPU)` when the run holds none."""
    gate = f"/{p.gpu_hours_gate:g}" if p.gpu_hours_gate is not None else ""
    if p.gpu_hours is None:
        return f"GPU-h —{gate} (no GPU)"
    return f"GPU-h {p.gpu_hours:.2f}{gate}"


def pace_text(p: Progress) -> str:
    def s(x: float | None) -> str:
        return "—" if x is None or not math.isfinite(x) else f"{x:.2f}s"

    return f"{s(p.last_step_s)}/step (med {s(p.median_step_s)})"


def status_tone(
    kind: str, exit_code: int | str | None, has_records: bool, failed: bool = False
) -> str:
    """How the header colours the status.

    The tone is "live" (records coming), "waiting" (launched, no record yet), "watching"
    (attached or a replay), "finished" (the engine exited 0), "stopped" (a signal ended it) or
    "failed" (it exited otherwise, or the log's end is an `error` event).
    """
    if failed:
        return "failed"
    if kind != "launch":
        return "watching"
    if isinstance(exit_code, str):
        return "stopped"
    if exit_code is not None:
        return "finished" if exit_code == 0 else "failed"
    return "live" if has_records else "waiting"


def run_status(
    kind: str, exit_code: int | str | None, has_records: bool, ended: bool, failed: bool = False
) -> str:
    """What the header says of the run's status.

    It says launching, running, finished (exit 0), stopped (SIGNAL), failed (exit N),
    attached or replay. An ended run gets " (ended)", or " (failed)" when its end was an
    `error` event.
    """
    if kind == "launch":
        return _launched_status(exit_code, has_records)
    end = (" (failed)" if failed else " (ended)") if ended else ""
    return ("replay" if kind == "replay" else "attached") + end


def _launched_status(exit_code: int | str | None, has_records: bool) -> str:
    """A launched run's status: launching, running, finished, stopped (SIGNAL), failed (exit N)."""
    if exit_code == 0:
        return "finished"
    if isinstance(exit_code, str):  # the signal that ended it (a stop, an interrupt)
        return f"stopped ({exit_code})"
    if exit_code is not None:
        return f"failed (exit {exit_code})"
    return "running" if has_records else "launching"


@dataclass(frozen=True, slots=True)
class RunEvent:
    """A line of the run's story for the monitor.

    The lines are checkpoints, starts, resumes (with the probes of the abandoned timeline
    they superseded), ends, errors and rotations.
    """

    line: int  # where in the log (the store's numbering), for ordering
    step: int | None
    kind: str  # "checkpoint" | "start" | "resume" | "end" | "error" | "segment" | other event
    text: str
    path: str = ""  # a file path shown after the text (a checkpoint's), literal


def run_events(
    store: RunStore, limit: int = 6, words: Callable[[Event], tuple[str, str]] = event_words
) -> list[RunEvent]:
    """The last `limit` of them, oldest first; texts are literal (from the log).

    An event's name and detail are as `words` says them: core/watch/traineralerts.py's
    `event_words` (credentials masked), or a session's, which hides while the read is hidden
    the words that may quote it.

    Each kind's list is in line order, so the last `limit` of all are among the last `limit`
    of each: a run with a million events costs what one with `limit` does."""
    out = [
        RunEvent(c.line, c.step, "checkpoint", "checkpoint", literal(c.path))
        for c in store.checkpoints[-limit:]
    ]
    out += (_event_line(store, e, words) for e in store.events[-limit:])
    out += (
        RunEvent(
            g.first_line,
            None,
            "segment",
            f"reading {literal(g.name)}" + (f" ({literal(g.why)})" if g.why else ""),
        )
        for g in store.segments[-limit:]
    )
    out.sort(key=lambda r: r.line)
    return out[-limit:]


NO_EVENTS = "no checkpoint or resume yet"


def no_events(preset: Preset) -> str:
    """What the events panel says while it has none.

    Another trainer's log records no checkpoint, and a resume only where its steps start
    again: "none yet" would claim what this program cannot know of such a run."""
    if preset.source is None or not preset.foreign:
        return NO_EVENTS
    return f"no resume in its {preset.source.kind} log; it records no checkpoint (not known here)"


def _event_line(store: RunStore, e: Event, words: Callable[[Event], tuple[str, str]]) -> RunEvent:
    """An event's line, as `words` names it; a resume's names the probes it superseded."""
    name, said = words(e)
    text = f"{name}: {said}" if said else name
    if e.event == "resume":
        text += _superseded(store, e)
    return RunEvent(e.line, e.step, e.event, text)


def _superseded(store: RunStore, resume: Event) -> str:
    """The probes of the timeline a resume abandoned, in words ("" for none)."""
    gone = sorted(s for s, line in store.superseded_at() if s > resume.step and line < resume.line)
    if not gone:
        return ""
    return (
        f" (superseded probe{'s' if len(gone) > 1 else ''} "
        f"{', '.join(map(str, gone))}; the later ones count)"
    )


def evidence_lines(store: RunStore, hidden: bool) -> tuple[str, ...]:
    """What the log got wrong, for the monitor, as literal text.

    That is out-of-order records (not applied), conflicting probes, and notices such as a
    meta record of another run. While the read is `hidden` the conflicting probes, and another
    trainer's eval values that are not numbers, are counted, as the verdict's blinded card
    counts them: a read at their step is UNDECIDABLE, so naming it (or its lines) would say the
    hidden read's class (core/run/evidence.py's `seen_conflicts`, `seen_odd_values`).
    """
    out = []
    if store.out_of_order_count:
        first = store.out_of_order[0]
        out.append(
            f"{store.out_of_order_count} record(s) out of order, not applied (first: "
            f"{store.where(first.line)}, {first.why})"
        )
    for c in seen_conflicts(store, hidden)[:3]:
        out.append(
            f"conflicting probes for step {c.step}: {store.where(c.first.line)} and "
            f"{store.where(c.second.line)} (no resume between them)"
        )
    if hidden and (n := store.counts()["conflicts"]):
        out.append(f"{n} conflicting probe(s): steps and values {blind.HIDDEN} until the endpoint")
    if odd := seen_odd_values(store, hidden):  # another trainer's eval values not numbers
        out.append(odd)
    out += store.notices[:3]
    return tuple(literal(line) for line in out)
