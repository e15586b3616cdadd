"""Every committed screenshot (screenshots/*.svg, shown in the README and the docs) is what the
code draws now: each is made again by screenshots/make.py into a temporary folder and compared
with the committed file. A change that alters a screen fails here until the images are made
again (`python screenshots/make.py`).

The live images (make.LIVE_SHOTS: a run launched and watched as `fontaine-tui launch` does,
its telemetry recorded by the real recorder) hold pids, memory, CPU and times that differ
from run to run: each is compared by its layout (make.layout: its text, numbers, paths and
states left out). Whether the host has a GPU, and a block device under its temporary folder,
is what its telemetry panel draws: on a host unlike the one that made them they are skipped,
saying why."""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1] / "screenshots"
spec = importlib.util.spec_from_file_location("screenshots_make", HERE / "make.py")
assert spec is not None and spec.loader is not None
make = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make)


def test_every_committed_image_is_made_by_the_script():
    assert sorted(p.name for p in HERE.glob("*.svg")) == sorted(make.ALL)


@pytest.mark.parametrize("name", make.ALL)
def test_a_committed_screenshot_is_what_the_code_draws(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # make.py moves about; the test's folder comes back after
    if name in make.LIVE_SHOTS and (unlike := host_unlike()):
        pytest.skip(f"screenshots/{name}: {unlike}")
    made = make.one(name, tmp_path)
    committed = (HERE / name).read_text()
    if name in make.LIVE_SHOTS:
        ours, theirs = make.layout(made.read_text()), make.layout(committed)
        diff = "\n".join(
            difflib.unified_diff(_lines(theirs), _lines(ours), "committed", "made", lineterm="")
        )
        assert ours == theirs, (
            f"screenshots/{name}'s layout differs from what the code draws now: run "
            f"`python screenshots/make.py live` and look at the new image\n{diff[:4000]}"
        )
        return
    assert made.read_text() == committed, (
        f"screenshots/{name} differs from what the code draws now: "
        f"run `python screenshots/make.py` and look at the new image"
    )


def _lines(layout: dict[int, list[str]]) -> list[str]:
    return [f"{col:3} {word}" for col, words in sorted(layout.items()) for word in words]


def host_unlike() -> str:
    """How this host's telemetry differs from what the committed live images show, or "".

    The processes image's heading says the GPUs' state (no GPU, and why), the monitor's
    history has disk read and write lines only over a block device."""
    from fontaine_tui.core.host.nvml import read_gpus
    from fontaine_tui.core.host.recorder import block_stat

    shown = " ".join(
        " ".join(w) for w in make.layout((HERE / "live-processes.svg").read_text()).values()
    )
    gpus, why = read_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"))
    said = "" if gpus else " ".join(re.sub(r"\d[\d.,:/]*", "#", why).split())
    if gpus and "no GPU (" in shown:
        return "made on a host without a GPU; this one has one"
    if not gpus and f"no GPU ({said})" not in shown:
        return f"made on a host whose GPUs read otherwise than here (no GPU: {why})"
    disk = "disk read" in " ".join(
        " ".join(w) for w in make.layout((HERE / "live-monitor.svg").read_text()).values()
    )
    with tempfile.TemporaryDirectory() as tmp:
        here = block_stat(Path(tmp)) is not None
    if disk != here:
        made, now = ("on", "not on") if disk else ("not on", "on")
        return f"made with its temporary folder {made} a block device; this host's is {now} one"
    return ""


def test_the_layout_leaves_out_what_varies_and_keeps_what_is_drawn():
    """A committed live image compared with itself changed: a pid one digit longer, other
    memory figures and units read the same; a word of the screen changed does not."""
    svg = (HERE / "live-monitor.svg").read_text()
    pid = re.search(r"command&#160;pid&#160;(\d+)", svg)
    ram = re.search(r"host&#160;RAM&#160;([\d.]+/[\d.]+)&#160;GiB", svg)
    assert pid is not None and ram is not None
    varied = svg.replace(pid.group(1), pid.group(1) + "7").replace(ram.group(1), "812/1007.9")
    varied = varied.replace("&#160;GiB", "&#160;MiB")
    assert make.layout(varied) == make.layout(svg)
    assert make.layout(svg.replace("RUNNING", "STOPPED")) != make.layout(svg)
    assert make.layout(svg.replace("host&#160;RAM", "host&#160;ROM")) != make.layout(svg)


def test_a_pid_one_digit_shorter_moves_no_column_past_a_tree_guide():
    """The processes table is as wide as its longest pid: with pids one digit shorter, each
    row's tree guide, and the command after it, is drawn a column further left."""

    def svg(rows: list[str]) -> str:
        out = []
        for y, row in enumerate(rows):
            for m in re.finditer(r"[^└]+|└", row):
                x = m.start() * 12.2
                text = m.group().replace(" ", "&#160;")
                out.append(f'<text class="r1" x="{x}" y="{y * 24.4}">{text}</text>')
        return "\n".join(out)

    long = svg([" 16614  command (python)", " 16623    └ python  sleeping"])
    short = svg([" 3122  command (python)", " 3125    └ python  sleeping"])
    assert make.layout(long) == make.layout(short)
    assert make.layout(long) != make.layout(svg([" 3122  command (python)", " 3125 └ ruby"]))
