"""The monitor gives its room to what has something to show: the engine-output pane only
once the engine printed a line, warnings in words without raw key=value dumps, and the
run's events (checkpoints, resumes with the probes they superseded) in their own panel."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.geometry import Region

from tests.console.conftest import SIZE, console, loaded, make_run, text, until
from tests.logs import RIGONLY_LIKE, T0, probe, records, records_upto, train, write_log


async def test_engine_pane_hidden_until_the_engine_prints(tmp_path: Path) -> None:
    log = make_run(tmp_path / "run", upto=1000)  # no engine.out.log at all
    app = console(log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        tail = app.screen.query_one("#engine-tail")
        chart = app.screen.query_one("#loss-chart")
        assert tail.display is False
        alone = chart.size.height
        assert alone >= SIZE[1] - 6  # the chart has the screen but header, status and footer
        (tmp_path / "run" / "engine.out.log").write_text("engine: hello\n")
        app.session.tail.append("engine: hello")  # what the session's tail reader adds
        app.session.tail_total += 1
        app.tail_total = app.session.tail_total
        await until(pilot, lambda: tail.display is True)
        await pilot.pause()
        assert chart.size.height < alone
        assert "engine: hello" in "\n".join(str(line) for line in tail.lines)


async def test_engine_pane_shown_when_the_engine_printed(tmp_path: Path) -> None:
    log = make_run(tmp_path / "run", upto=1000, engine_out="engine: step 1000 done\n")
    app = console(log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await until(pilot, lambda: app.screen.query_one("#engine-tail").display is True)


async def test_events_panel_shows_checkpoints_and_a_resume_with_superseded_probes(
    tmp_path: Path,
) -> None:
    recs = records_upto(800, RIGONLY_LIKE)
    t = T0 + 900
    # the engine died after step 800 and resumed from the step-500 checkpoint: the probe at
    # 750 of the abandoned timeline is superseded by the one written after the resume
    recs.append(
        {
            "kind": "event",
            "step": 500,
            "time": t,
            "event": "resume",
            "detail": "from checkpoints/step-000500",
        }
    )
    for s in range(501, 901):
        recs.append(train(s, t + s))
        if s == 750:
            recs.append(probe(s, t + s, 3.6, 3.3))
    folder = tmp_path / "run"
    folder.mkdir()
    log = write_log(folder / "train_log.jsonl", recs)
    app = console(log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 900)
        shown = text(app.screen.query_one("#events"))
        assert "checkpoint …/step-000500" in shown  # its folder left out: no room beside it
        assert "resume: from checkpoints/step-000500" in shown
        assert "superseded probe 750; the later ones count" in shown


@pytest.mark.parametrize(
    ("size", "folder"),
    [((120, 40), "outputs/train/grasp_sft_v2_demosonly_1gpu_disc/"), ((80, 24), "")],
)
async def test_a_checkpoint_path_is_never_split_inside_a_name(
    tmp_path: Path, size: tuple[int, int], folder: str
) -> None:
    """A path too long for the events panel loses its leading folders ("…/step-000500"),
    beside its step or on a line of its own: the wrap never falls inside a name."""
    recs = records()
    for rec in recs:
        if rec["kind"] == "checkpoint":
            rec["path"] = folder + rec["path"]
    app = console(write_log(tmp_path / "run" / "train_log.jsonl", recs))
    async with app.run_test(size=size) as pilot:
        await loaded(pilot, 1000)
        await pilot.pause()
        panel = app.screen.query_one("#events")
        rows = [strip.text for strip in panel.render_lines(Region(0, 0, *panel.outer_size))]
    drawn = "\n".join(rows)
    assert re.findall(r"[\w/.…-]*step-\d+", drawn) == ["…/step-000500", "…/step-001000"], drawn


async def test_warnings_say_numbers_in_words(tmp_path: Path) -> None:
    log = make_run(tmp_path / "run", upto=1000)
    app = console(log)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await pilot.pause(0.1)
        shown = text(app.screen.query_one("#warnings"))
        assert "first poll: s/step 0.5 s" in shown
        assert "step_s=" not in shown and "records=" not in shown


async def test_the_monitor_says_what_the_log_got_wrong(tmp_path: Path) -> None:
    from tests.logs import meta, records

    recs = records(probes=RIGONLY_LIKE)
    recs.insert(300, meta(step=0, t=T0, run="someone-else"))
    recs.insert(len(recs) - 1, probe(1000, T0 + 900, 2.0, 3.0))  # a conflict, no resume
    recs += [train(s, T0 + 2000 + s) for s in range(10, 20)]  # stray steps after the end
    folder = tmp_path / "run"
    folder.mkdir()
    log = write_log(folder / "train_log.jsonl", recs)
    app = console(log)
    async with app.run_test(size=(160, 50)) as pilot:
        await until(pilot, lambda: app.session.store.out_of_order_count == 10)
        await pilot.pause(0.3)
        shown = " ".join(text(app.screen.query_one("#warnings")).split())
        assert "10 record(s) out of order, not applied" in shown
        assert "conflicting probes for step 1000" in shown
        assert "someone-else" in shown and "two runs may be writing one file" in shown
