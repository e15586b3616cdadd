"""The console babysits what it shows: its probe reads and first poll reach a real webhook on
127.0.0.1, and a destination that never answers does not slow it (measured against the same
console with no destination, side by side)."""

from __future__ import annotations

import json
import time

import pytest

from fontaine_tui.console import make_app
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.verdict.prereg import freeze
from tests.console.conftest import SIZE, loaded, make_run, until
from tests.core.notify.server import Hook, Silent
from tests.logs import T0

KEYS = ("p", "m") * 4


@pytest.fixture(autouse=True)
def no_user_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)


def run_folder(tmp_path, preset, name="run"):
    folder = tmp_path / name
    make_run(folder, upto=600)
    freeze(RunFolder(folder), preset, ["launch"], "here", now=T0 - 10)
    return folder


def app_on(folder, preset):
    # the clock: just after the last record, so the run is not (yet) stalled
    return make_app(
        source=LocalRun(folder),
        preset=preset,
        clock=lambda: T0 + 301,
        kind="attach",
        babysit_host="here",
        frame_s=0.05,
    )


async def test_the_console_posts_probe_reads_and_the_first_poll(tmp_path, preset, monkeypatch):
    hook = Hook()
    monkeypatch.setenv("FONTAINE_NOTIFY", hook.url("/hooks/KEY77"))
    folder = run_folder(tmp_path, preset)
    app = app_on(folder, preset)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 600)
        await until(pilot, lambda: len(hook.requests) >= 2)
        await pilot.pause(0.5)
    posts = [json.loads(r.body) for r in hook.wait_for(2)]
    titles = sorted(p["title"] for p in posts)
    run = preset.run_name
    assert f"{run}: first poll" in titles
    # a console that comes to a run under way posts the newest read nobody was told of,
    # not the log's whole history (probes at 250 and 500 here)
    assert [p["step"] for p in posts if "probe at step" in p["title"]] == [500]
    assert len(posts) == 2
    lines = [json.loads(x) for x in (folder / "babysit.jsonl").read_text().splitlines()]
    assert lines[0]["watcher"] == "console"
    assert [(x["what"], x["step"]) for x in lines if x["kind"] == "told"] == [("probe", 500)]

    # attached again: what was told is not told again
    async with app_on(folder, preset).run_test(size=SIZE) as pilot:
        await loaded(pilot, 600)
        await pilot.pause(1.0)
    assert len(hook.requests) == 2
    hook.close()


async def test_a_finished_run_attached_twice_gets_one_verdict_post_and_no_stall(
    tmp_path, preset, monkeypatch
):
    hook = Hook()
    monkeypatch.setenv("FONTAINE_NOTIFY", hook.url("/hooks/KEY78"))
    folder = tmp_path / "done"
    make_run(folder, upto=1000)  # the log ends with its `end` event
    freeze(RunFolder(folder), preset, ["launch"], "here", now=T0 - 10)

    def late_console():  # an hour after the end: silence, but of a finished run
        return make_app(
            source=LocalRun(folder),
            preset=preset,
            clock=lambda: T0 + 3600,
            kind="attach",
            babysit_host="here",
            frame_s=0.05,
        )

    verdicts = []
    for _ in range(2):
        app = late_console()
        async with app.run_test(size=SIZE) as pilot:
            await loaded(pilot, 1000)
            await until(
                pilot, lambda app=app: app.babysitter is not None and app.babysitter.finalized
            )
            await pilot.pause(1.0)
            assert "stall" not in {w.rule for w in app.session.warnings}
        bodies = [json.loads(r.body) for r in hook.wait_for(1)]
        verdicts.append(
            [b for b in bodies if "VERDICT" in b["title"].upper() or "verdict" in b["title"]]
        )
    hook.close()
    assert len(verdicts[0]) == 1 and len(verdicts[1]) == 1  # the second attach: no repost


async def _keys_time(app) -> float:
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 600)
        t0 = time.perf_counter()
        for key in KEYS:
            await pilot.press(key)
        await pilot.pause()
        elapsed = time.perf_counter() - t0
        sitter = app.babysitter
        queued = (
            0
            if sitter is None or sitter.notices is None
            else sum(s.queued for s in sitter.notices.notifier.stats().values())
        )
    return elapsed, queued


async def test_a_dead_endpoint_does_not_slow_the_console(tmp_path, preset, monkeypatch):
    """A destination that accepts the connection and never answers (each POST waits out its
    timeout, then retries): the console's keys take no longer than with no destination."""
    silent = Silent()
    try:
        times = {}
        for name, url in (
            ("none", None),
            ("dead", f"http://127.0.0.1:{silent.port}/h"),
            ("none2", None),
        ):
            if url:
                monkeypatch.setenv("FONTAINE_NOTIFY", url)
            else:
                monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)
            app = app_on(run_folder(tmp_path, preset, name), preset)
            times[name] = await _keys_time(app)
    finally:
        silent.close()
    (dead, queued), base = times["dead"], min(times["none"][0], times["none2"][0])
    assert queued >= 1  # messages were waiting on the dead endpoint the whole time
    assert dead < 2.0 * base + 0.5, times


async def test_a_launch_console_posts_launch_and_verdict_when_the_engine_exits_not_at_quit(
    tmp_path, monkeypatch
):
    """The console of a launch: the launch post first; the engine's exit is the run's end at
    once (registry, verdict.json, the verdict post) while the console stays open; closing
    it later finishes nothing twice."""
    import sys

    from fontaine_tui.core.preset.find import load_preset
    from fontaine_tui.core.run.launcher import EngineProcess
    from fontaine_tui.core.runs.registry import Entry, Registry
    from fontaine_tui.model.launched import LaunchedRun
    from tests.core.launch.test_launcher import FAKE

    hook = Hook()
    monkeypatch.setenv("FONTAINE_NOTIFY", hook.url("/hooks/KEY79"))
    monkeypatch.setenv("FONTAINE_REGISTRY", str(tmp_path / "state" / "runs.json"))
    preset = load_preset("smoke")
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    prereg = freeze(folder, preset, ["x"], "here")
    registry = Registry(tmp_path / "state" / "runs.json")
    registry.upsert(Entry("smoke", str(folder.root), "here"))
    engine = EngineProcess.start([sys.executable, FAKE, str(folder.root), "finish"], folder)
    launched = LaunchedRun(engine, registry, "here", str(folder.root), folder, preset, prereg)
    app = make_app(
        source=LocalRun(folder.root),
        preset=preset,
        process=engine,
        registry=registry,
        kind="launch",
        babysit_host="here",
        frame_s=0.05,
        launched=launched,
        announce=(str(folder.root), "engine pid 1", "ab" * 32),
    )
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: launched.code is not None, timeout=30)
        await until(
            pilot,
            lambda: any("verdict" in json.loads(r.body)["title"].lower() for r in hook.requests),
            timeout=15,
        )
        assert folder.verdict.exists()  # written before anyone quit
        assert registry.find(folder.root, "here").status == "exited"
        assert app.babysitter is None
    assert launched.after_console(0) == launched.code
    titles = [json.loads(r.body)["title"] for r in hook.wait_for(2)]
    hook.close()
    assert titles[0] == f"{preset.run_name}: launched"
    assert sum("verdict" in t.lower() for t in titles) == 1
