"""The console's read agrees with `fontaine-tui verdict`, and hides what the verdict hides.

The same random runs as tests/commands/test_surfaces_agree.py (blind, lock, stop on the lock,
an amendment, a restart, where the log ends); here the console's own model: a Session over the
run folder with its frozen preset, its ledger and the log the follower reads, its view (what
every screen draws), the metric browser's index over the same store, what the babysitter
sends a real webhook, and the console's export (verdict.json). Fewer examples: each reads the run three ways.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.log.read import load_log
from fontaine_tui.core.runfolder import LOG, RunFolder
from fontaine_tui.core.verdict.prereg import read_prereg
from fontaine_tui.model.babysitter import Babysitter
from fontaine_tui.model.metrics import PROBE, MetricIndex
from fontaine_tui.model.session import Session
from tests.commands.test_surfaces_agree import cli, make, probe_values, runs
from tests.profiles import examples


def session_view(root: Path, hook_url: str):  # type: ignore[no-untyped-def]
    """The console's view of the run: the session as `attach` opens it, the log read whole;
    and a babysitter over it, ticked once and closed (its deliveries done)."""
    preset = read_prereg(RunFolder(root)).frozen_preset(str(root / "prereg.json"))
    session = Session(LocalRun(root), preset, "attach", None, root)

    async def watch():  # type: ignore[no-untyped-def]
        await session.read_ledger()
        session.store = load_log(root / LOG, history=True)  # what the follower applied
        session.version += 1
        now = time.time()
        sitter = Babysitter.for_session(
            session, "test", "here", lambda _: None, env={"FONTAINE_NOTIFY": hook_url},
            clock=lambda: now, auto_final=True,
        )  # fmt: skip
        session.update_warnings(None, now)
        sitter.tick(None, now)
        sitter.close()
        await session.source.close()
        return session.view()

    return session, asyncio.run(watch())


@settings(
    max_examples=int(os.environ.get("FONTAINE_AGREE_EXAMPLES") or examples(25)) // 3 + 1,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(run=runs())
def test_the_console_reads_as_the_verdict_does(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, hook, run: dict
) -> None:
    where = tmp_path_factory.mktemp("session")
    monkeypatch.setenv("FONTAINE_USER", "alice")
    monkeypatch.setenv("XDG_STATE_HOME", str(where / "state"))
    root = make(where, run)
    code, out, err = cli("verdict", str(root), "--json")
    assert code != 70 and "internal error" not in err, err
    doc = json.loads(out)
    hidden = bool(doc.get("blinded"))

    hook.requests.clear()
    session, view = session_view(root, hook.url("/h/T"))
    assert view.blinded == hidden == session.hides(view.latest)
    sent = [json.loads(r.body) for r in hook.requests]
    assert sent, "the babysitter sent nothing"
    said = json.dumps(sent)
    if hidden:  # no notification names a class or holds a probe's value
        assert not {"HEALTHY", "DRIFT", "AMBIGUOUS", "UNDECIDABLE"} & set(said.split()), sent
        words = set(said.replace(",", " ").replace('"', " ").replace("\\n", " ").split())
        assert not probe_values(run) & words, sent
    else:  # the final notice, where the run is over, names the verdict's label
        finals = [p["title"] for p in sent if ": VERDICT " in p["title"]]
        assert all(t.endswith(f": VERDICT {doc['verdict']}") for t in finals), (finals, doc)
    if not hidden:
        assert (view.latest.label, view.latest.provisional) == (
            doc["verdict"],
            doc["provisional"],
        ), doc.get("reason")
        assert [r.step for r in view.rows] == view.store.probe_steps()
        outcome = session.export(view, None, False)  # the `e` key: the latest read
        assert outcome.severity != "error", outcome
        written = json.loads((root / "verdict.json").read_text())
        assert (written["verdict"], written["provisional"]) == (doc["verdict"], doc["provisional"])
        return
    # hidden: no row, no read, no offer; the metric browser lists the probe fields, no value
    assert view.rows == () and view.verdicts == () and view.score_offer is None
    outcome = session.export(view, None, False)  # refused: verdict.json would show the read
    assert outcome.severity == "error" and not (root / "verdict.json").exists(), outcome
    index = MetricIndex(view.store, view.blinded)
    for name in index.names():
        if index.kind(name) == PROBE:
            assert len(index.series(name).values) == 0, name
    shown = repr(view.rows) + repr(view.verdicts) + view.note
    assert not probe_values(run) & set(shown.replace(",", " ").split())
