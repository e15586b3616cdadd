"""Engine output is shown literally: Rich markup and ANSI escapes in it stay text."""

from __future__ import annotations

from fontaine_tui.widgets.engine_tail import EngineTail
from tests.console.conftest import SIZE, console, loaded, make_run, until

HOSTILE = "loss [bold red]x[/] then \x1b[31mred\x1b[0m and \x1b]0;title\x07 done\n"


async def test_markup_and_ansi_render_literally(tmp_path):
    folder = tmp_path / "run"
    app = console(make_run(folder, engine_out="step 1 ok\n" + HOSTILE))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        tail = app.screen.query_one(EngineTail)
        await until(pilot, lambda: tail.line_count >= 2)
        line = tail.lines[-1]
        assert line == ("loss [bold red]x[/] then \\x1b[31mred\\x1b[0m and \\x1b]0;title\\x07 done")
        await pilot.pause()
        # what is on screen: the same characters, in the widget's plain style
        strip = tail.render_line(tail.line_count - 1 - int(tail.scroll_offset.y))
        shown = "".join(seg.text for seg in strip).rstrip()
        assert shown.startswith("loss [bold red]x[/] then \\x1b[31mred")
        colours = {seg.style.color.name for seg in strip if seg.style and seg.style.color}
        assert not ({"red", "color(1)"} & colours)
        assert not any(seg.style and seg.style.bold for seg in strip)
