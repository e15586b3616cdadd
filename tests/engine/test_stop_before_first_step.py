"""A stop before the first step ends the engine at once, in a real process.

Building a first run's corpus takes a minute on a busy CPU, and a stop (`launch`'s Ctrl-C
before the console draws, `fontaine-tui stop`) used to wait for the first step to finish
before the engine saw it. With nothing trained yet there is nothing to save: the engine
exits 128 + the signal within seconds, logs its end, and leaves no half-built corpus.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.engine


def test_sigint_while_the_corpus_builds_stops_the_engine_at_once(tmp_path: Path) -> None:
    out, data = tmp_path / "run", tmp_path / "cache" / "corpus"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fontaine_engine", "train", "--output-dir", str(out)]
        + ["--data-dir", str(data), "--model-size", "tiny", "--steps", "4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    try:
        seen = []
        for line in proc.stdout:  # the status lines come as the build begins
            seen.append(line)
            if line.startswith("engine: status: building the corpus: "):
                break
        assert seen and seen[-1].startswith("engine: status: building the corpus"), seen
        asked = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
        took = time.monotonic() - asked
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 128 + signal.SIGINT, code
    assert took < 15, f"the stop took {took:.1f} s"
    last = json.loads((out / "train_log.jsonl").read_text().splitlines()[-1])
    assert (last["kind"], last["event"], last["step"]) == ("event", "end", 0), last
    assert last["detail"] == "stopped by SIGINT before the first step", last
    assert not data.exists(), "a half-built corpus was left"
    assert sorted(p.name for p in data.parent.iterdir()) == [], "its temporary folder was left"
