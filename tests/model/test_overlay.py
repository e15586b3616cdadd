"""The overlay's data: several real run folders pinned, followed, coloured, and their bounds
drawn only when every run is held to the same rule."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from fontaine_tui.core.charts.loss import Ema
from fontaine_tui.core.charts.overlay import overlay_losses, overlay_probes
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.model.overlay import MOST_PINS, RUN_COLORS, Overlay
from fontaine_tui.model.runs import RunEntry, open_target
from fontaine_tui.model.session import Session
from fontaine_tui.model.view import Outcome
from tests.conftest import PRESETS
from tests.logs import records_upto, write_log


def _run(root: Path, preset, upto: int) -> RunEntry:
    root.mkdir(parents=True)
    freeze(RunFolder(root), preset, ["launch"], "here", now=1_700_000_000)
    write_log(root / "train_log.jsonl", records_upto(upto))
    return RunEntry(root.name, str(root), None, "running" if upto < 1000 else "exited", "")


def _opener(preset):
    base = Session(_NoSource(), preset, "replay")

    def open_(entry: RunEntry) -> tuple[Session, Outcome | None]:
        return open_target(base, entry.target)

    return open_


class _NoSource:
    label = "none"


async def _followed(overlay: Overlay, steps: dict[str, int]) -> None:
    """Follow every pin until its store holds `steps[name]`, then unpin them all."""
    tasks = [asyncio.create_task(overlay.follow(p)) for p in overlay.pins.values()]

    async def caught_up() -> None:
        while not all(
            p.session.store.steps and p.session.store.last_step == steps[p.entry.name]
            for p in overlay.pins.values()
        ):
            await asyncio.sleep(0.02)

    await asyncio.wait_for(caught_up(), 10)
    await overlay.close()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)


@pytest.fixture
def other_bounds(tmp_path):
    """demosonly_1gpu with another healthy bound: the same metric, a different rule."""
    text = (PRESETS / "demosonly_1gpu.toml").read_text()
    assert "healthy_max = 0.30" in text
    path = tmp_path / "other_bounds.toml"
    path.write_text(
        text.replace("healthy_max = 0.30", "healthy_max = 0.25").replace(
            'name = "grasp_sft_v2_demosonly_1gpu_disc"', 'name = "other_bounds"'
        )
    )
    return load_preset(str(path))


def test_each_pin_gets_its_own_look_and_an_unpinned_ones_look_is_free_again(tmp_path, demosonly):
    """The first six pins take a colour each; past them the colours come round again, each
    round with another marker, so no two pins are drawn alike."""
    overlay = Overlay()
    entries = [_run(tmp_path / f"run{i}", demosonly, 600) for i in range(MOST_PINS + 1)]
    opener = _opener(demosonly)
    for e in entries[:MOST_PINS]:
        pin, gone, said = overlay.toggle(e, opener)
        assert pin is not None and gone is None and "pinned" in said.message
    pins = list(overlay.pins.values())
    assert [p.color for p in pins] == list(RUN_COLORS) * (MOST_PINS // len(RUN_COLORS))
    assert [p.marker for p in pins[: len(RUN_COLORS)]] == [""] * len(RUN_COLORS)
    assert pins[len(RUN_COLORS)].marker == "+"  # cyan again, with the chart's second marker
    assert len({(p.color, p.marker) for p in pins}) == MOST_PINS
    pin, gone, said = overlay.toggle(entries[-1], opener)  # every look taken: no more
    assert pin is None and said.severity == "warning" and len(overlay.pins) == MOST_PINS
    pin, gone, said = overlay.toggle(entries[1], opener)  # pinned: space unpins it
    assert gone is not None and gone.color == RUN_COLORS[1] and "unpinned" in said.message
    pin, _, _ = overlay.toggle(entries[-1], opener)
    assert pin is not None and (pin.color, pin.marker) == (RUN_COLORS[1], "")
    # each session follows its own folder, with the frozen preset of that folder
    assert {p.session.folder for p in overlay.pins.values()} == {
        Path(e.folder) for e in entries if e is not entries[1]
    }
    asyncio.run(overlay.close())


def test_the_same_rule_draws_its_bounds_and_each_run_is_a_curve(tmp_path, demosonly):
    live = _run(tmp_path / "live", demosonly, 800)
    done = _run(tmp_path / "done", demosonly, 1000)
    overlay = Overlay()
    for e in (live, done):
        overlay.toggle(e, _opener(demosonly))
    asyncio.run(_followed(overlay, {"live": 800, "done": 1000}))
    runs = overlay.runs()
    assert [(r.name, r.state, r.color) for r in runs] == [
        ("live", "running", "cyan"),
        ("done", "finished", "magenta"),
    ]
    losses = overlay_losses(runs, 0.9)
    assert [c.label for c in losses.curves] == ["live (running)", "done (finished)"]
    # the monitor's smoothing: the debiased EMA of the train loss, per run
    st = runs[0].store
    expected = Ema(0.9, st.columns["loss"]).extend()
    assert list(losses.curves[0].ys) == pytest.approx(expected)
    assert len(losses.curves[0].xs) == 800 and len(losses.curves[1].xs) == 1000
    probes = overlay_probes(runs)
    assert [(h.label, h.y) for h in probes.hlines] == [
        ("healthy <= +0.3000", 0.30),
        ("same-drift >= +1.0158", 1.0158),
    ]
    assert "every run's rule: delta(500->s) eval_chunk_mae" in probes.note
    # each run's reads from its anchor: the live one to its 750 probe, the done one to 1000
    assert [c.xs for c in probes.curves] == [(500.0, 750.0), (500.0, 750.0, 1000.0)]
    assert all(math.isfinite(y) for c in probes.curves for y in c.ys)


def test_runs_with_different_rules_get_no_bounds_and_the_note_names_each(
    tmp_path, demosonly, other_bounds
):
    a = _run(tmp_path / "a", demosonly, 1000)
    b = _run(tmp_path / "b", other_bounds, 1000)
    overlay = Overlay()
    for e in (a, b):
        overlay.toggle(e, _opener(demosonly))  # b's frozen preset, not the console's, counts
    asyncio.run(_followed(overlay, {"a": 1000, "b": 1000}))
    runs = overlay.runs()
    assert runs[1].preset.verdict.healthy == 0.25
    probes = overlay_probes(runs)
    assert probes.hlines == ()
    assert "the runs' rules differ, no bounds drawn" in probes.note
    assert "a: delta(500->s) eval_chunk_mae, healthy <= +0.3000, drift >= +1.0158" in probes.note
    assert "b: delta(500->s) eval_chunk_mae, healthy <= +0.2500, drift >= +1.0158" in probes.note


def test_a_run_whose_host_refuses_is_marked_not_answering(tmp_path, demosonly, monkeypatch):
    """A real ssh to a closed port: its follower's trouble marks the pin, nothing is raised."""
    monkeypatch.setenv("FONTAINE_SSH_CONNECT_S", "0")  # one try per connection
    entry = RunEntry("far", "/runs/far", None, "running", "", "ssh://127.0.0.1:1")
    base = Session(_NoSource(), demosonly, "replay")
    overlay = Overlay()
    overlay.toggle(entry, lambda e: open_target(base, e.target, None, ("-F", "/dev/null")))
    pin = overlay.pins[entry.target]

    async def watch() -> None:
        task = asyncio.create_task(overlay.follow(pin))
        while not pin.trouble:
            await asyncio.sleep(0.05)
        await overlay.close()
        await asyncio.wait_for(task, 10)

    asyncio.run(asyncio.wait_for(watch(), 30))
    state = overlay.runs()[0].state
    assert state.startswith("not answering: ") and "Connection refused" in state


def test_a_row_naming_a_host_ssh_would_read_as_an_option_is_refused_in_one_line(demosonly):
    entry = RunEntry("evil", "/runs/a", None, "remote", "", "-oProxyCommand=touch x")
    base = Session(_NoSource(), demosonly, "replay")
    overlay = Overlay()
    pin, gone, said = overlay.toggle(entry, lambda e: open_target(base, e.target))
    assert pin is None and gone is None and not overlay.pins
    assert said.severity == "error"
    assert (
        said.message.startswith("evil: not pinned: ") and "may not begin with '-'" in said.message
    )


def test_a_blinded_runs_reads_stay_hidden_in_the_overlay(tmp_path, demosonly):
    from tests.commands.test_blind import blind_preset

    seen = _run(tmp_path / "seen", demosonly, 750)
    hidden = _run(tmp_path / "hidden", load_preset(str(blind_preset(tmp_path))), 750)
    overlay = Overlay()
    for e in (seen, hidden):
        overlay.toggle(e, _opener(demosonly))
    asyncio.run(_followed(overlay, {"seen": 750, "hidden": 750}))
    runs = overlay.runs()
    assert [(r.name, r.blinded, r.read_words) for r in runs] == [
        ("seen", False, "read +0.4000 @ 750"),
        ("hidden", True, "read blinded"),
    ]
    probes = overlay_probes(runs)
    assert [len(c.xs) for c in probes.curves] == [2, 0]  # nothing of the hidden run's read
    assert "blinded, read not drawn: hidden" in probes.note


def test_a_running_run_with_no_new_line_for_two_minutes_is_said_to_be_quiet(tmp_path, demosonly):
    now = [1000.0]
    overlay = Overlay(clock=lambda: now[0])
    pin, _, _ = overlay.toggle(_run(tmp_path / "live", demosonly, 600), _opener(demosonly))
    assert pin is not None and pin.state(now[0]) == "running"
    now[0] += 119
    assert overlay.runs()[0].state == "running"
    now[0] += 61
    assert overlay.runs()[0].state == "running, quiet 3 min"
    asyncio.run(overlay.close())
