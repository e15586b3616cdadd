"""A ledger of many amendments costs its length once per read of the ledger, not once per
probe: `replay --plain` reads the verdict at every probe, and 20,000 declarations made that
probes x amendments (seconds a probe). The verdicts read are the same as with the whole
ledger given to every read."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.follow.replay import ReplayRun
from fontaine_tui.core.verdict import rules
from fontaine_tui.core.verdict.ledger import read_amendments
from fontaine_tui.core.verdict.prereg import read_prereg
from fontaine_tui.core.verdict.record import EXIT_CODES
from fontaine_tui.model.session import Session

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from amendments import make_run  # noqa: E402


def test_a_replay_checks_each_amendment_a_few_times_not_once_per_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    count, probes = 2000, 40
    folder = make_run(tmp_path, count, "mixed", probes)
    checked = [0]
    real = rules.check_amendments

    def counting(amendments, *rest, **kw):
        amendments = list(amendments)
        checked[0] += len(amendments)
        return real(amendments, *rest, **kw)

    monkeypatch.setattr(rules, "check_amendments", counting)
    monkeypatch.setattr("fontaine_tui.model.session.check_amendments", counting, raising=False)
    assert main(["replay", str(folder.root), "--plain"]) == EXIT_CODES["UNDECIDABLE"]
    assert "verdict:" in capsys.readouterr().out
    assert checked[0] < 5 * count, f"{checked[0]} amendment checks for {count} amendments"


@pytest.mark.parametrize("kind", ["mixed", "scale", "comparator", "extend", "late"])
def test_the_reads_are_those_of_the_whole_ledger(tmp_path: Path, kind: str) -> None:
    folder = make_run(tmp_path, 60, kind, 12)
    session = Session(
        ReplayRun(folder.log), read_prereg(folder).frozen_preset("p"), "replay", folder=folder.root
    )

    async def read() -> None:
        await session.read_ledger()
        async for batch in session.source.follow():
            session.apply(batch)

    asyncio.run(read())
    ledger = tuple(read_amendments(folder))
    assert session.ledger.amendments == ledger and len(ledger) == 60
    whole = rules.compute_verdict(
        session.store, session.preset, None, ledger, session.ledger.provenance
    )
    # the session also carries the review trail's state and why the blind would withhold the
    # read (a run ended before its endpoint: evidence.py's `withheld`), which compute_verdict
    # leaves out
    assert replace(session.latest(), review=None, withheld="") == whole
    series, latest = session._read_verdicts()
    assert replace(latest, review=None, withheld="") == whole
    assert [replace(v, review=None) for v in series] == rules.verdict_series(
        session.store, session.preset, ledger, session.ledger.provenance
    )
    statuses = {c.status for c in whole.amendments}
    assert statuses == ({"applied"} if kind == "extend" else {"applied", "refused"})
    if kind in ("extend", "mixed", "late"):  # the endpoint moved by each applied extend in turn
        assert whole.endpoint_step > session.preset.verdict.endpoint_step
