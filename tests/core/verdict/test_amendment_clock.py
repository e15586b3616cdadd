"""An amendment held to the log's own clock (core/verdict/amendments.py's LogClock).

A declaration records the last step it saw; the log records when it logged each probe. An
amendment declared after the log had logged a probe at the step it first affects (or later)
is late, whatever step it says it saw: a ledger written in a stale copy of the run and carried
back. The probes a resume superseded were seen too; a log whose format records no times
passes no step, but the engine's log requires them, and a probe of it without one leaves the
clock nothing to read; the preset's own amendments, frozen at launch, are not on the clock. The console's session
reads the same checks as the headless verdict."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

from fontaine_tui.core.follow.replay import ReplayRun
from fontaine_tui.core.log.read import load_lines
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.amendments import LogClock, check_amendments, declared_ts
from fontaine_tui.core.verdict.ledger import declare_amendment, read_amendments
from fontaine_tui.core.verdict.prereg import freeze, read_prereg
from fontaine_tui.core.verdict.rules import compute_verdict
from fontaine_tui.model.session import Session
from tests.core.launch.conftest import without_amendments
from tests.logs import RIGONLY_LIKE, T0, dumps, records


def declared(tmp_path: Path, seen: int = 300):
    """A run folder whose ledger holds one fixed scale declared now, having seen `seen`."""
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    preset = load_preset(without_amendments(tmp_path))
    freeze(folder, preset, ["engine"], "h")
    declare_amendment(folder, factor=1.25, last_step_seen=seen, preset=preset)
    [a] = read_amendments(folder)
    when = declared_ts(a)
    assert when is not None
    return folder, read_prereg(folder).frozen_preset(), a, when


def log(recs: list[dict], start: float, upto: int = 1000) -> list[dict]:
    """The fixture run cut at `upto`, its clock moved to start at `start`."""
    return [
        {**r, "time": r["time"] - T0 + start}
        for r in recs
        if r["step"] <= upto and r.get("event") != "end"
    ]


def store_of(recs: list[dict]):
    return load_lines(["".join(dumps(r) + "\n" for r in recs).encode()], final=True)


def test_a_declaration_after_the_log_passed_its_step_is_late(tmp_path):
    _, preset, a, when = declared(tmp_path)
    # the probe at 500 (the anchor) logged 250 s after the start: 10 s before the declaration
    before = store_of(log(records(RIGONLY_LIKE), when - 260.1))
    [check] = check_amendments([a], preset, LogClock.of(before.probes.values()))
    assert check.status == "refused"
    assert check.reason.startswith(f"declared at {a.declared_at}, but the log's own clock had ")
    assert "passed step 500 (the anchor probe): its probe at step 500 was logged at" in check.reason
    v = compute_verdict(before, preset, None, [a])  # the verdict reads the store's own clock
    assert v.amendments[0].status == "refused" and v.scale is None
    # logged after the declaration: in time
    after = store_of(log(records(RIGONLY_LIKE), when + 1))
    assert compute_verdict(after, preset, None, [a]).amendments[0].status == "applied"
    # without the clock (the log's steps only), the declaration says it saw step 300
    assert check_amendments([a], preset)[0].status == "applied"


def test_a_probe_a_resume_superseded_was_seen(tmp_path):
    _, preset, a, when = declared(tmp_path)
    recs = log(records(RIGONLY_LIKE), when - 3600, upto=600)
    resume = {"kind": "event", "step": 400, "time": when - 10, "event": "resume", "detail": ""}
    recs += [resume, *log(records(RIGONLY_LIKE), when + 1, upto=450)[-60:]]
    store = store_of(recs)
    assert 500 not in store.probes and [p.step for p in store.superseded] == [500]
    assert compute_verdict(store, preset, None, [a]).amendments[0].status == "refused"


def test_logs_without_times_and_the_presets_own_amendments_on_the_clock(tmp_path):
    _, preset, a, _ = declared(tmp_path)
    untimed = store_of([{**r, "time": 0} for r in records(RIGONLY_LIKE)])
    # a format that records no time passes no step by its clock
    free = LogClock.of(untimed.probes.values())
    assert check_amendments([a], preset, free)[0].status == "applied"
    # the engine's log requires one: its probe at the anchor without one cannot be read
    [check] = compute_verdict(untimed, preset, None, [a]).amendments
    assert check.status == "refused", check
    assert "logs the probe at step 500 with no `time`" in check.reason
    assert "cannot show it was declared before step 500 (the anchor probe)" in check.reason
    # before the log shows the anchor, nothing it affects is left unclocked
    short = store_of([{**r, "time": 0} for r in records(RIGONLY_LIKE) if r["step"] < 500])
    assert compute_verdict(short, preset, None, [a]).amendments[0].status == "applied"
    own = replace(a, source="preset")
    early = store_of(log(records(RIGONLY_LIKE), 1.0e9))  # logged in 2001
    assert check_amendments([own], preset, LogClock.of(early.probes.values()))[0].status == (
        "applied"
    )


def test_the_console_session_reads_the_same_clock(tmp_path):
    folder, preset, a, when = declared(tmp_path)
    folder.log.write_text("".join(json.dumps(r) + "\n" for r in log(records(), when - 3600)))
    session = Session(ReplayRun(folder.log), preset, "replay", folder=folder.root)

    async def read() -> None:
        await session.read_ledger()
        async for batch in session.source.follow():
            session.apply(batch)

    asyncio.run(read())
    latest = session.latest()
    assert [c.status for c in latest.amendments] == ["refused"] and latest.scale is None
    whole = compute_verdict(session.store, preset, None, [a], session.ledger.provenance)
    assert replace(latest, review=None) == whole
