"""Printed lines ([source] kind "lines"): LeRobot's training lines, printed by a real
subprocess as LeRobot's logging and MetricsTracker format them (its `format_big_number`
K/M/B suffixes included), read cold and followed live by `attach --plain` as a real
subprocess; a bad pattern refused at preset load; a matched value that is not a number
counted; a torn last line held until its newline."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.cold import load_source
from fontaine_tui.core.log.formats.printed import ROUNDED, LinesDecoder
from fontaine_tui.core.log.records import Probe, TrainPoint
from fontaine_tui.core.preset.find import load_preset

# LeRobot's train loop, printing only: init_logging's format (level, date, the last 15
# characters of path:line right-aligned, the message), MetricsTracker.__str__ (step, smpl, ep
# with format_big_number; epch to 2 places; each AverageMeter as name:avg in its format).
# argv: steps, log_freq, eval_freq, pause between steps, then "bad" to print grdn:-- once.
PRINTER = r"""
import sys, time
from datetime import datetime

def format_big_number(num, precision=0):
    suffixes = ["", "K", "M", "B", "T", "Q"]
    divisor = 1000.0
    for suffix in suffixes:
        if abs(num) < divisor:
            return f"{num:.{precision}f}{suffix}"
        num /= divisor
    return num

def info(msg, line):
    dt = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    fnameline = f"lerobot/scripts/train.py:{line}"
    print(f"INFO {dt} {fnameline[-15:]:>15} {msg}", flush=True)

steps, log_freq, eval_freq, pause = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), \
    float(sys.argv[4])
bad = sys.argv[5:] == ["bad"]
batch, frames, episodes = 8, 20000, 50
print("Loading dataset ...", flush=True)
info("Start offline training on a fixed dataset", 190)
for step in range(1, steps + 1):
    time.sleep(pause)
    samples = step * batch
    head = (f"step:{format_big_number(step)} smpl:{format_big_number(samples)} "
            f"ep:{format_big_number(samples / (frames / episodes))} epch:{samples / frames:.2f}")
    if step % log_freq == 0:
        loss, grdn = 1.0 / step ** 0.5, 10.0 / step
        grdn_text = "--" if bad and step == 2 * log_freq else f"{grdn:.3f}"
        info(f"{head} loss:{loss:.3f} grdn:{grdn_text} lr:{1e-4:0.1e} updt_s:{0.123:.3f} "
             f"data_s:{0.004:.3f}", 232)
    if step % eval_freq == 0:
        success = 50.0 + 15.0 * (step / steps)
        info(f"{head} \u2211rwrd:{12.345:.3f} success:{success:.1f} eval_s:{1.5:.3f}", 250)
print("End of training", flush=True)
"""

PATTERNS = r"""patterns = [
  '^INFO (?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) .*step:(?P<step>\S+) .* loss:(?P<loss>\S+) grdn:(?P<grad_norm>\S+) lr:(?P<lr>\S+)',
  'step:(?P<step>\S+) .* success:(?P<success>\S+)',
]"""


def preset(tmp_path: Path, source: str = PATTERNS, anchor: int = 200, endpoint: int = 400) -> Path:
    path = tmp_path / "printed.toml"
    path.write_text(f"""[run]
name = "printed"
question = "Does the success rate hold after step {anchor}?"

[source]
kind = "lines"
eval = ["success"]
{source}

[verdict]
metric = "success"
direction = "higher"
anchor_step = {anchor}
endpoint_step = {endpoint}
healthy_min = -2.0
drift_max = -10.0
""")
    return path


def printed(folder: Path, *argv: str) -> None:
    folder.mkdir(exist_ok=True)
    with open(folder / "engine.out.log", "wb") as out:
        subprocess.run([sys.executable, "-c", PRINTER, *argv], stdout=out, check=True, timeout=60)


@pytest.fixture(scope="module")
def run_400(tmp_path_factory) -> Path:
    """400 steps, a train line every 20, an eval line every 100, one grdn not a number."""
    folder = tmp_path_factory.mktemp("printed") / "run"
    printed(folder, "400", "20", "100", "0", "bad")
    return folder


def test_lerobot_lines_read_cold(run_400, tmp_path, capsys):
    spec = load_preset(str(preset(tmp_path))).source
    assert spec is not None
    st = load_source(run_400, spec).store
    assert list(st.steps) == list(range(20, 401, 20))
    assert st.columns["loss"][0] == pytest.approx(round(1 / 20**0.5, 3))
    assert st.columns["lr"][0] == pytest.approx(1e-4)
    assert {s: p.fields["success"] for s, p in st.probes.items()} == {
        100: 53.8,
        200: 57.5,
        300: 61.2,
        400: 65.0,
    }
    assert st.columns["time"][0] > 1.7e9  # the printed date and time
    # grdn:-- at step 40 is counted and said; the line's other values are read
    assert st.malformed_count == 1
    assert any(
        "line" in n and "grad_norm at step 40: '--' is not a number" in n for n in st.notices
    )
    assert st.columns["loss"][1] == pytest.approx(round(1 / 40**0.5, 3))
    assert main(["verdict", str(run_400), "--preset", str(preset(tmp_path))]) == 0
    assert "VERDICT: HEALTHY" in capsys.readouterr().out


def test_k_suffixed_steps_are_read_and_their_rounding_said(tmp_path):
    folder = tmp_path / "big"
    printed(folder, "4000", "500", "1000", "0")  # step:1K, step:2K (1500 rounds to 2K) ...
    spec = load_preset(str(preset(tmp_path, anchor=2000, endpoint=4000))).source
    assert spec is not None
    loaded = load_source(folder, spec)
    st = loaded.store
    assert set(st.probes) == {1000, 2000, 3000, 4000}
    assert ROUNDED in st.notices
    # 1500, 2000 and 2500 all print as step:2K: one step with three losses, not a guess
    assert any("train value(s) logged twice for one step" in n for n in st.notices)


@pytest.mark.parametrize(
    ("patterns", "said"),
    [
        (
            "patterns = ['step:(?P<step>\\S+ loss:(?P<loss>\\S+)']",
            "source.patterns[0]: 'step:(?P<step>\\\\S+ loss:(?P<loss>\\\\S+)' is not a regular "
            "expression (missing ), unterminated subpattern",
        ),
        (
            "patterns = ['loss:(?P<loss>\\S+)']",
            "source.patterns[0]: 'loss:(?P<loss>\\\\S+)' has no named group `step`",
        ),
        (
            "patterns = ['x', 'step:(?P<step>\\d+) loss:(?P<loss>\\S+)']",
            "source.patterns[0]: 'x' has no named group `step`",
        ),
        ("patterns = []", "source.patterns: expected a regular expression or a list of them"),
        ("", 'source.patterns: expected with kind = "lines"'),
    ],
)
def test_a_bad_pattern_is_refused_at_preset_load(tmp_path, capsys, patterns, said):
    path = preset(tmp_path, patterns)
    with pytest.raises(InputError, match="source.patterns") as caught:
        load_preset(str(path))
    assert said in str(caught.value)
    assert main(["verdict", str(tmp_path), "--preset", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err


def test_patterns_only_with_kind_lines(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(preset(tmp_path).read_text().replace('kind = "lines"', 'kind = "jsonl"'))
    with pytest.raises(InputError, match='source.patterns: expected only with kind = "lines"'):
        load_preset(str(path))


def test_a_torn_last_line_waits_for_its_newline(tmp_path):
    spec = load_preset(str(preset(tmp_path))).source
    assert spec is not None
    dec = LinesDecoder(spec.fields, spec.patterns)
    head = b"INFO 2025-01-02 10:00:00 ipts/train.py:232 step:20 smpl:160 ep:0 epch:0.01 "
    assert dec.feed(head + b"loss:0.51") == []  # torn: 0.51 may be 0.512
    out = dec.feed(b"2 grdn:0.500 lr:1.0e-04 updt_s:0.123 data_s:0.004\nunrelated\n")
    out += dec.finish()
    [point] = [r for r in out if isinstance(r, TrainPoint)]
    assert point.step == 20 and point.loss == 0.512 and point.grad_norm == 0.5
    assert dec.bad_count == 0


def _read_until(proc: subprocess.Popen, want: str, timeout: float) -> str:
    """The child's output until a line holding `want` (or the timeout)."""
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    seen = b""
    deadline = time.monotonic() + timeout
    while want.encode() not in seen and time.monotonic() < deadline:
        if sel.select(0.2):
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            seen += chunk
    return seen.decode("utf-8", "replace")


def test_attach_plain_follows_printed_lines_live(tmp_path):
    folder = tmp_path / "live"
    folder.mkdir()
    path = preset(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[4])}
    with open(folder / "engine.out.log", "wb") as out:
        trainer = subprocess.Popen(
            [sys.executable, "-c", PRINTER, "400", "20", "100", "0.01", "bad"], stdout=out
        )
        attach = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fontaine_tui.cli",
                "attach",
                str(folder),
                "--plain",
                "--preset",
                str(path),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
        try:
            early = _read_until(attach, "probe step 100", 60)
            running = trainer.poll() is None
            text = early + _read_until(attach, "verdict: HEALTHY (final", 60)
        finally:
            attach.send_signal(signal.SIGINT)
            attach.wait(timeout=30)
            assert trainer.wait(timeout=60) == 0
    assert "probe step 100: success 53.8000" in early and running, early
    assert "probe step 400: success 65.0000" in text, text
    # the matched value that is not a number is said while following, not only when cold
    assert (
        "1 unreadable entry in engine.out.log, not applied (line 4: grad_norm at step "
        "40: '--' is not a number)" in text
    )
    assert "verdict: HEALTHY (final, step 400 of 400" in text, text
    spec = load_preset(str(path)).source
    assert spec is not None and spec.kind == "lines"
    cold = load_source(folder, spec).store
    assert len(cold.steps) == 20 and isinstance(cold.probes[400], Probe)
