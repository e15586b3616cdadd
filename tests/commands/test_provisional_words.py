"""A provisional read is not given the final read's words.

The reference preset's run read where its log stands: before the anchor (step 500) it waits for
the anchor probe (not "the instrument cannot read this run ... fix the probe"); at the anchor
the delta is 0 by construction, so it waits for a probe past it (not HEALTHY's "CONVICTED: the
distributed path is the culprit"); after it, the class's interpretation is what it would mean
if it held at the endpoint; only the final read is interpreted. Through the real `verdict`, and
the console's header at 200, 120 and 80 columns, which says the state and the read in whole words.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import LOG, RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from tests.commands.test_surfaces_agree import cli
from tests.logs import T0, records_upto, write_log

ROOT = Path(__file__).resolve().parents[2]


def run_at(tmp_path: Path, upto: int) -> Path:
    root = tmp_path / f"cut{upto}"
    root.mkdir()
    preset = load_preset(ROOT / "presets" / "demosonly_1gpu.toml")
    freeze(RunFolder(root), preset, ["fontaine-tui", "launch", "p"], "h", now=T0 - 10)
    write_log(root / LOG, records_upto(upto))
    return root


@pytest.mark.parametrize(
    ("upto", "said", "unsaid"),
    [
        (300, "read: waiting for the anchor probe (step 500)", ("interpretation", "fix the probe")),
        (
            500,
            "read: waiting for a probe past the anchor (step 500)",
            ("interpretation", "CONVICTED"),
        ),
        (750, "if this holds at the endpoint: Rigonly-class result", ("interpretation:",)),
        (1000, "interpretation: Rigonly-class result", ("if this holds", "waiting")),
    ],
)
def test_a_provisional_read_is_not_interpreted_as_final(
    tmp_path: Path, upto: int, said: str, unsaid: tuple[str, ...]
) -> None:
    code, out, err = cli("verdict", str(run_at(tmp_path, upto)))
    assert code != 70 and "error" not in err, err
    assert said in out, out
    for words in unsaid:
        assert words not in out, (words, out)


@pytest.mark.parametrize(
    ("size", "upto", "read", "preset"),
    [
        ((200, 60), 750, "  read AMBIGUOUS (PROVISIONAL, step 750 of 1000)  preset ", True),
        ((120, 40), 750, "  read AMBIGUOUS (PROVISIONAL)  preset ", True),
        ((80, 24), 750, "  read AMBIGUOUS (PROVISIONAL)", False),
        ((200, 60), 300, "  read waiting for the anchor probe (step 500)  preset ", True),
        ((120, 40), 300, "  read waiting for step 500  preset ", True),
        ((80, 24), 300, "  read waiting for step 500", False),
    ],
)
async def test_the_header_says_the_state_and_the_read_in_whole_words(
    tmp_path: Path, size: tuple[int, int], upto: int, read: str, preset: bool
) -> None:
    """At 80 columns the read takes its short form and the preset is left out whole."""
    from fontaine_tui.widgets.run_header import RunHeader
    from tests.console.conftest import console, loaded, text

    root = run_at(tmp_path, upto)
    app = console(root / LOG, preset=load_preset(ROOT / "presets" / "demosonly_1gpu.toml"))
    async with app.run_test(size=size) as pilot:
        await loaded(pilot, upto)
        title = text(app.screen.query_one(RunHeader).query_one("#title"))
    assert title.startswith("grasp_sft_v2_demosonly_1gpu_disc  REPLAY"), title
    assert read in title and len(title) <= size[0] - 2, title
    assert ("  preset demosonly_1gpu" in title) is preset, title
