"""`launch --plain`'s watch (a stand-in engine to its end) with webhooks whose secret is the
FIRST path segment: a generic `http://HOST:PORT/TOKEN` and a self-hosted ntfy topic (service
= "ntfy" in config.toml). Neither token is in the output, in the failure lines, nor in any file
the run writes (the real engine's test, tests/core/launch/test_real_engine.py, has its token in
a later segment)."""

from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path

from fontaine_tui.core.notify import delivery
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.run.launcher import EngineProcess
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.model.plain import babysit
from tests.core.notify.server import dead_port

FAKE = str(Path(__file__).parents[1] / "core" / "launch" / "fake_engine.py")
TOKENS = ("GENERICSECRET1", "GENERICSECRET2", "NTFYTOPICSECRET")


def test_first_segment_tokens_are_in_no_output_and_no_file(tmp_path, hook, monkeypatch, capsys):
    config = tmp_path / "config" / "fontaine-tui" / "config.toml"  # holds tokens by necessity
    config.parent.mkdir(parents=True)
    dead = dead_port()
    config.write_text(
        f'[[notify]]\nurl = "http://127.0.0.1:{dead}/NTFYTOPICSECRET"\nservice = "ntfy"\n'
    )
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    # one try each: a refused connection fails at once, no back-off to wait out
    monkeypatch.setattr(delivery, "Policy", functools.partial(delivery.Policy, tries=1))
    monkeypatch.setenv(
        "FONTAINE_NOTIFY", f"{hook.url('/GENERICSECRET1')},http://127.0.0.1:{dead}/GENERICSECRET2"
    )
    (tmp_path / "run").mkdir()
    folder = RunFolder(tmp_path / "run")
    preset = load_preset("smoke")
    prereg = freeze(folder, preset, ["x"], "h")
    engine = EngineProcess.start([sys.executable, FAKE, str(folder.root), "finish"], folder)
    registry = Registry()
    registry.upsert(Entry("smoke", str(folder.root), "h", pid=engine.pid))
    try:
        babysit(preset, folder, engine, registry, "h", prereg, 0.2, False)
    finally:
        if engine.poll() is None:
            engine.stop(grace_int=10)
    out, err = capsys.readouterr()
    # both dead destinations failed, each said by its redacted label
    said = re.findall(r"notification to (\S+) failed: (.*)", out)
    assert said and {where for where, _ in said} == {f"http://127.0.0.1:{dead}/***"}, out
    assert all(why.startswith("cannot connect") for _, why in said), out
    posts = [json.loads(r.body) for r in hook.requests]  # the live one got the run's notices
    assert posts and posts[0]["title"] == "smoke: launched"
    assert all(r.path == "/GENERICSECRET1" for r in hook.requests)
    for token in TOKENS:
        assert token not in out + err, token
        for path in tmp_path.rglob("*"):
            if path.is_file() and path != config:
                assert token.encode() not in path.read_bytes(), (token, path)
