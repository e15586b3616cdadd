"""A preset's own [[amendments]], many of them, cost their number once per read of the ledger.

`replay --plain` reads the verdict at every probe; each read checked every amendment of the
frozen preset again (20,000 of them: 30 s for 100 probes, where the verdict alone takes 2 s).
The session checks them once with the ledger's and gives each read the few that change it
(bench/amendments.py --in-preset): the reads are the same as with every amendment given to
every read."""

from __future__ import annotations

import asyncio
import importlib.util
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

ROOT = Path(__file__).resolve().parents[2]


def _bench():  # the run bench/amendments.py --in-preset times
    spec = importlib.util.spec_from_file_location("amendments", ROOT / "bench" / "amendments.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BENCH = _bench()


def test_a_replay_checks_each_preset_amendment_a_few_times_not_once_per_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    count, probes = 2000, 40
    _, folder = BENCH.preset_run(tmp_path, count, probes)
    checked = [0]
    real = rules.check_amendments

    def counting(amendments, *rest, **kw):  # the real check, its work counted
        amendments = list(amendments)
        checked[0] += len(amendments)
        return real(amendments, *rest, **kw)

    monkeypatch.setattr(rules, "check_amendments", counting)
    monkeypatch.setattr("fontaine_tui.model.session.check_amendments", counting)
    # every extend applied: the endpoint (1000 + 250 x 2000) is past the last probe
    assert main(["replay", str(folder.root), "--plain"]) == EXIT_CODES["UNDECIDABLE"]
    assert "verdict:" in capsys.readouterr().out
    assert checked[0] < 5 * count, f"{checked[0]} amendment checks for {count} amendments"


@pytest.mark.parametrize("ledger", ["", "mixed", "scale", "late"])
def test_the_reads_are_those_of_every_amendment(tmp_path: Path, ledger: str) -> None:
    count = 40
    _, folder = BENCH.preset_run(tmp_path, count, 12)
    if ledger:  # declarations of the ledger's own after the preset's
        BENCH.write_ledger(folder, 20, ledger, first_id=count + 1)
    session = Session(
        ReplayRun(folder.log), read_prereg(folder).frozen_preset("p"), "replay", folder=folder.root
    )

    async def read() -> None:
        await session.read_ledger()
        async for batch in session.source.follow():
            session.apply(batch)

    asyncio.run(read())
    declared = tuple(read_amendments(folder)) if ledger else ()
    assert len(session.preset.amendments) == count and session.ledger.amendments == declared
    whole = rules.compute_verdict(
        session.store, session.preset, None, declared, session.ledger.provenance
    )
    # the gate's word on the blind (evidence.py's `withheld`) is the session's, not the rules'
    assert replace(session.latest(), review=None, withheld="") == whole
    series, latest = session._read_verdicts()
    assert replace(latest, review=None, withheld="") == whole
    assert [replace(v, review=None) for v in series] == rules.verdict_series(
        session.store, session.preset, declared, session.ledger.provenance
    )
    assert whole.endpoint_step == 1000 + 250 * count  # each preset extend applied in turn
