"""The endpoint a resumed run trains to: the pre-registered one, moved by the applied extends.

The run folder's prereg.json and amendments.jsonl are read as `fontaine-tui verdict` reads them
(the frozen preset, the hash chain, check_amendments), so a resume trains to the step the
verdict waits for. A broken chain is one line: no endpoint can be trusted from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict.amendments import check_amendments, endpoint_in_force
from fontaine_tui.core.verdict.ledger import read_amendments
from fontaine_tui.core.verdict.prereg import read_prereg


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the verdict reads a run: as pre-registered, and after the applied extends."""

    registered: int  # the frozen preset's verdict.endpoint_step
    in_force: int  # after the extends check_amendments applies
    ledger: str  # amendments.jsonl, as the refusals name it

    @property
    def extended(self) -> bool:
        return self.in_force > self.registered


def resume_endpoint(folder: RunFolder) -> Endpoint:
    """The endpoint in force for a resume of the run in `folder`.

    InputError (one line) when prereg.json cannot be read or the amendment chain is broken."""
    frozen = read_prereg(folder).frozen_preset(str(folder.prereg))
    try:
        ledger = read_amendments(folder)
    except InputError as exc:
        raise InputError(
            f"--resume: {exc}; the endpoint in force cannot be read from a broken chain, "
            "so the run is not resumed"
        ) from None
    every = [*frozen.amendments, *ledger]
    checks = check_amendments(every, frozen)
    return Endpoint(
        frozen.verdict.endpoint_step,
        endpoint_in_force(frozen, every, checks),
        literal(str(folder.amendments)),
    )
