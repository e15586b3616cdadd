"""Every mode at 80x24, 120x40 and 200x60 shows its state whole; below 80x24, one line says
the size to make the terminal.

What is checked is what the terminal shows (the compositor's lines), not a widget's text: a
field the layout cuts at the screen's edge or hides under another fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.cells import cell_len

from fontaine_tui.screens.base import MIN_SIZE
from tests.console.conftest import console, demo_console, loaded, make_run, sample_registry
from tests.logs import SCALED_LIKE

SIZES = [(80, 24), (120, 40), (200, 60)]
HEADER = ("REPLAY (ENDED)", "read AMBIGUOUS-BY-INSTRUMENT (final", "step 1000 / 1000", "ETA done")
# each mode's key and the state it must show whole at every size
MODES = {
    "monitor": (("m",), HEADER),
    "probes": (("p",), ("units: raw", "step", "eval MAE")),
    "verdict": (("v",), ("AMBIGUOUS-BY-INSTRUMENT  [FINAL]  read at step 1000 of 1000",)),
    "runs": (("r",), ("2 run(s) in the registry", "grasp_sft_v2_demosonly_1gpu_disc", "smoke")),
    "metrics": (("b",), (*HEADER, "15 of 15 fields")),
    "processes": (("t",), ("a finished run has no processes",)),
    "help": (("question_mark",), ("Key bindings", "what it does", "Progress, losses,")),
}


def shown(app) -> list[str]:
    """The screen's lines as the terminal shows them."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_every_mode_shows_its_state_whole(size, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_run(tmp_path / "run", upto=1000, probes=SCALED_LIKE)
    registry = sample_registry(tmp_path / "registry.toml")
    app = console(Path("run") / "train_log.jsonl", registry=registry)
    async with app.run_test(size=size) as pilot:
        await loaded(pilot, 1000)
        for mode, (keys, musts) in MODES.items():
            for key in keys:
                await pilot.press(key)
            await pilot.pause(0.3)
            lines = shown(app)
            assert len(lines) == size[1] and all(len(line) <= size[0] for line in lines)
            text = "\n".join(lines)
            for must in musts:
                assert any(must in line for line in lines), (mode, must, text)
            assert "make the terminal" not in text
            if mode == "help":
                await pilot.press("escape")


@pytest.mark.parametrize("size", [(79, 24), (80, 23), (60, 15)], ids=str)
async def test_below_the_minimum_one_line_says_the_size_and_q_quits(size, tmp_path):
    app = console(make_run(tmp_path / "run", upto=1000, probes=SCALED_LIKE))
    async with app.run_test(size=size) as pilot:
        await loaded(pilot, 1000)
        for key in ((), ("v",)):  # the monitor, and a mode switched to while too small
            for k in key:
                await pilot.press(k)
            await pilot.pause(0.2)
            said = [line.strip() for line in shown(app) if line.strip()]
            w, h = MIN_SIZE
            assert said == [
                f"make the terminal at least {w}x{h} (it is {size[0]}x{size[1]}); q quits"
            ]
        await pilot.resize_terminal(*SIZES[1])  # made larger: the mode is drawn again
        await pilot.pause(0.3)
        assert not any("make the terminal" in line for line in shown(app))
        assert any("AMBIGUOUS-BY-INSTRUMENT  [FINAL]" in line for line in shown(app))
        await pilot.resize_terminal(*size)
        await pilot.pause(0.2)
        await pilot.press("q")
        await pilot.pause(0.5)
    assert app.return_code is not None


def test_at_80_columns_the_header_keeps_the_read_and_the_lock():
    """The demo's run, locked at step 250: at 80 columns the lock keeps its short form beside
    the read, at 120 its whole one."""
    import asyncio

    from fontaine_tui.commands import demo

    for size, lock in (((80, 24), "  locked at 250"), ((120, 40), "decision locked at step 250")):
        with demo.staged(speed=1e6) as staged:
            app = demo_console(staged)

            async def first_line(app=app, size=size) -> str:
                async with app.run_test(size=size) as pilot:
                    await loaded(pilot, 300)
                    return shown(app)[0]

            title = asyncio.run(first_line())
        assert "REPLAY (ENDED)  read HEALTHY (final" in title and lock in title, title


@pytest.mark.parametrize("width", [80, 120])
async def test_a_wide_or_odd_run_name_never_pushes_the_state_off_the_line(width, tmp_path):
    """Wide characters take two cells and a control character is drawn escaped: the header
    measures what it draws, so the status and the read stay whole on the line."""
    from fontaine_tui.core.preset.find import load_preset

    text = (Path(__file__).parents[2] / "presets" / "demosonly_1gpu.toml").read_text()
    odd = "把握实验第二版仅演示单卡判别器运行_\\u001b[31m红_e\\u0301"
    preset_path = tmp_path / "odd.toml"
    preset_path.write_text(
        text.replace('name = "grasp_sft_v2_demosonly_1gpu_disc"', f'name = "{odd}"')
    )
    app = console(
        make_run(tmp_path / "run", upto=1000, probes=SCALED_LIKE), preset=load_preset(preset_path)
    )
    async with app.run_test(size=(width, 30)) as pilot:
        await loaded(pilot, 1000)
        title = shown(app)[0]
    assert "REPLAY (ENDED)  read AMBIGUOUS-BY-INSTRUMENT (final" in title, title
    assert cell_len(title.rstrip()) <= width, title


async def test_the_help_wraps_again_when_the_terminal_narrows(tmp_path):
    """Opened at 200 columns then narrowed to 84, the help's descriptions wrap anew instead of
    being cut at the edge ("attach t")."""
    app = console(make_run(tmp_path / "run", upto=1000, probes=SCALED_LIKE))
    async with app.run_test(size=(200, 40)) as pilot:
        await loaded(pilot, 1000)
        await pilot.press("question_mark")
        await pilot.pause(0.3)
        await pilot.resize_terminal(84, 40)
        await pilot.pause(0.5)
        lines = shown(app)
    text = "\n".join(lines)
    [at] = [i for i, line in enumerate(lines) if "Runs in the babysit registry;" in line]
    assert "to one" in lines[at] + lines[at + 1], text  # wrapped whole, not cut at the edge
