"""One log record as one plain line (launch, attach and replay --plain)."""

from __future__ import annotations

import math
from collections.abc import Callable

from fontaine_tui.core.log.records import Checkpoint, Event, Meta, Probe, TrainPoint
from fontaine_tui.core.text import literal
from fontaine_tui.core.watch.traineralerts import event_words


def _num(x: float, places: int = 4) -> str:
    return f"{x:.{places}f}" if math.isfinite(x) else repr(x)


def describe_record(
    rec: object, steps: int, words: Callable[[Event], tuple[str, str]] = event_words
) -> str | None:
    """The record as one line; an event's name and detail as `words` says them.

    `words` is core/watch/traineralerts.py's `event_words` (credentials masked) or a
    session's, which hides the detail that may quote a blinded read."""
    if isinstance(rec, TrainPoint):
        return _train_line(rec, steps)
    if isinstance(rec, Probe):
        return _probe_line(rec)
    if isinstance(rec, Checkpoint):
        return f"checkpoint step {rec.step}: {literal(rec.path)}"
    if isinstance(rec, Event):
        name, said = words(rec)
        return f"event {name} at step {rec.step}" + (f": {said}" if said else "")
    if isinstance(rec, Meta):
        return (
            f"meta: run {literal(rec.run)}, world size {rec.world_size}, device "
            f"{literal(rec.device)}, host {literal(rec.host)}"
        )
    return None


def _train_line(rec: TrainPoint, steps: int) -> str:
    """A train record: ours with its losses and data share, another trainer's with its loss."""
    if math.isnan(rec.ar_ce) and math.isnan(rec.flow_loss):  # another trainer's record
        rate = f"  {_num(rec.step_s, 2)} s/step" if math.isfinite(rec.step_s) else ""
        return f"step {rec.step}/{steps}  loss {_num(rec.loss)}{rate}"
    data = f"{rec.data_s / rec.step_s:.0%}" if rec.step_s > 0 else "?"
    return (
        f"step {rec.step}/{steps}  loss {_num(rec.loss)}  ar_ce {_num(rec.ar_ce)}  "
        f"flow {_num(rec.flow_loss)}  {_num(rec.step_s, 2)} s/step  data {data}"
    )


def _probe_line(rec: Probe) -> str:
    """A probe: ours with its two errors, another trainer's with its first keys."""
    if math.isnan(rec.eval_chunk_mae) and "eval_chunk_mae" not in rec.fields and rec.fields:
        shown = list(rec.fields.items())[:6]  # another trainer's: its own keys
        more = ", ..." if len(rec.fields) > 6 else ""
        return (
            f"probe step {rec.step}: "
            + ", ".join(f"{literal(k)} {_num(v)}" for k, v in shown)
            + more
        )
    return (
        f"probe step {rec.step}: eval_chunk_mae {_num(rec.eval_chunk_mae)}  "
        f"train_chunk_mae {_num(rec.train_chunk_mae)}"
    )
