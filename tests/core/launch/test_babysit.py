"""The babysit cadence with an injected clock, what a poll records, babysit.jsonl, and the
one-watcher lock (held by a real second process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.verdict.rules import compute_verdict
from fontaine_tui.core.watch import babysit as b
from fontaine_tui.core.watch.alerts import RunWarning
from tests.core.launch.test_alerts import GIB, T0, store_with, tel

MIN = 60.0


def clock(
    first_steps: int = 0,
    first_min: float = 0.0,
    every_min: float = 30.0,
    launched: float | None = T0,
) -> b.PollClock:
    return b.PollClock(b.Cadence(first_steps, first_min * MIN, every_min * MIN), launched)


def test_first_poll_at_the_first_step_time_then_every_30_minutes() -> None:
    """The document's default: a first poll as soon as there is an s/step to read, then one
    every 30 minutes of the injected clock, not of the wall."""
    c = clock()
    assert c.due(store_with(2), T0 + 5) is None  # step 1 is a warm-up: no s/step yet
    st = store_with(3)
    assert c.due(st, T0 + 100) == "first"
    c.done(T0 + 100)
    assert c.due(st, T0 + 100 + 30 * MIN - 1) is None
    assert c.due(st, T0 + 100 + 30 * MIN) == "cadence"
    c.done(T0 + 100 + 30 * MIN)
    assert c.due(st, T0 + 100 + 59 * MIN) is None
    assert c.due(st, T0 + 100 + 60 * MIN) == "cadence"
    assert c.count == 2


def test_first_poll_by_steps_or_minutes_whichever_comes_first() -> None:
    by_steps = clock(first_steps=50)
    assert by_steps.due(store_with(49, step_s=1.0), T0 + 49) is None  # records alone: no
    assert by_steps.due(store_with(50, step_s=1.0), T0 + 50) == "first"
    by_time = clock(first_steps=1000, first_min=10)
    st = store_with(20, step_s=1.0)
    assert by_time.due(st, T0 + 10 * MIN - 1) is None
    assert by_time.due(st, T0 + 10 * MIN) == "first"
    # without a launch time, the engine's first meta record starts the clock
    no_launch = clock(first_min=10, launched=None)
    assert no_launch.due(st, T0 + 10 * MIN) == "first"


def test_a_restarted_watcher_carries_on_from_babysit_jsonl(tmp_path: Path) -> None:
    path = tmp_path / b.BABYSIT_LOG
    cadence = b.Cadence(0, 0.0, 30 * MIN)
    st = store_with(5)
    v = compute_verdict(st, load_preset("demosonly_1gpu"))
    rec = b.poll_record("first", st, tel(), v, [], T0 + 100, 1000, "test")
    b.append_poll(path, rec)
    with open(path, "ab") as fh:
        fh.write(b'{"torn": ')  # a watcher killed mid-line
    again = b.resumed_clock(cadence, T0, path)
    assert (again.last, again.count) == (T0 + 100, 1)
    assert again.due(st, T0 + 200) is None  # not "first" again
    assert again.due(st, T0 + 100 + 30 * MIN) == "cadence"
    # polls of an earlier attempt do not count for this one
    assert b.resumed_clock(cadence, T0, path, since=T0 + 150).last is None


def test_a_poll_records_the_documents_numbers() -> None:
    st = store_with(12, step_s=2.0, data_s=0.8)
    preset = load_preset("demosonly_1gpu")
    v = compute_verdict(st, preset)
    starving = RunWarning("starvation", "warn", T0, "input starvation: waiting for data 40 %", {})
    first = RunWarning("first-poll", "info", T0, "first poll: ...", {})
    rec = b.poll_record(
        "first",
        st,
        tel(util=12.0, avail_frac=0.25),
        v,
        [starving, first],
        T0 + 30,
        1000,
        "launch --plain",
        gpu_hours=0.5,
    )
    assert rec["s_per_step"] == 2.0 and rec["gpu_util_pct"] == 12.0
    assert rec["ram_available"] == 25 * GIB and rec["ram_total"] == 100 * GIB
    assert rec["data_wait"] == pytest.approx(0.4)
    assert rec["level"] == "warn" and [w["rule"] for w in rec["warnings"]] == ["starvation"]
    assert rec["verdict"] == v.label and rec["step"] == 12 and rec["steps"] == 1000
    json.dumps(rec, allow_nan=False)  # one strict JSON line
    text = b.poll_text(rec)
    assert text.splitlines()[0] == (
        "step 12/1000 · 2 s/step · GPU util 12 % · data wait 40% · "
        "RAM free 25.0 GiB of 100.0 · 0.50 GPU-hours"
    )
    assert "warn: input starvation" in text
    assert text.endswith("fix the input starvation before letting it ride")
    # a later poll says the numbers, not the first poll's advice
    later = b.poll_record("cadence", st, None, v, [starving], T0 + 60, 1000, "x")
    assert "fix the input" not in b.poll_text(later)
    assert later["gpu_util_pct"] is None and "no telemetry" in b.poll_text(later)


def test_babysit_jsonl_is_appended_never_rewritten(tmp_path: Path) -> None:
    path = tmp_path / b.BABYSIT_LOG
    path.write_bytes(b"a line this program did not write\n")
    st = store_with(3)
    v = compute_verdict(st, load_preset("demosonly_1gpu"))
    for i in range(3):
        b.append_poll(path, b.poll_record("cadence", st, None, v, [], T0 + i, 1000, "x"))
    data = path.read_bytes()
    assert data.startswith(b"a line this program did not write\n")
    assert [p["time"] for p in b.read_polls(path)] == [T0, T0 + 1, T0 + 2]


LOCKER = """
import sys, time
from pathlib import Path
from fontaine_tui.core.watch.babysit import WatchLock
lock = WatchLock(Path(sys.argv[1]), "host:/run")
print(lock.acquire(), flush=True)
time.sleep(30)
"""


def test_one_watcher_babysits_a_run(tmp_path: Path) -> None:
    """A second process holding the lock keeps this one from babysitting the same run;
    another run is free; once the holder is gone (killed: no clean-up) the lock is free."""
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "True"
        mine = b.WatchLock(tmp_path, "host:/run")
        assert mine.acquire() is False
        assert mine.holder() == f"pid {holder.pid}"
        other = b.WatchLock(tmp_path, "host:/other run")
        assert other.acquire() is True
        other.release()
    finally:
        holder.kill()
        holder.wait()
    assert mine.acquire() is True and mine.held
    mine.release()


def test_preset_babysit_and_notify_sections(tmp_path: Path) -> None:
    """[babysit] away from its defaults enters the hash (frozen with the run) but is not a
    change of bounds; [[notify]] never enters the canonical form (a webhook is a secret);
    shipped presets keep their sha256."""
    from fontaine_tui.core.verdict.prereg import BoundsChange

    base = Path(load_preset("smoke").path).read_text()
    assert load_preset("smoke").sha256.startswith("7b90f466640b")
    secret = "https://hooks.slack.com/services/T0/B0/SECRETTOKEN"
    p = tmp_path / "watched.toml"
    p.write_text(
        base + f'\n[babysit]\ncadence_minutes = 45\n\n[[notify]]\nurl = "{secret}"\n'
        'level = "warn"\n\n[[notify]]\nurl_env = "RUN_HOOK"\n'
    )
    watched = load_preset(p)
    assert watched.babysit["cadence_minutes"] == 45.0
    assert b.Cadence.of(watched).every_s == 45 * MIN
    assert watched.canonical["babysit"] == {"cadence_minutes": 45.0}
    assert "SECRETTOKEN" not in json.dumps(dict(watched.canonical), default=str)
    assert "SECRETTOKEN" not in repr(watched.notify)
    change = BoundsChange(("babysit",), "a", "b")
    assert not change.math_changed
    # the table without the secret hashes as the preset without [[notify]]
    q = tmp_path / "same.toml"
    q.write_text(base + "\n[babysit]\ncadence_minutes = 45\n")
    assert load_preset(q).sha256 == watched.sha256

    from fontaine_tui.core.preset.watching import preset_destinations

    found, off = preset_destinations(watched.notify, {})
    assert [d.service for d in found] == ["slack"] and found[0].level == "warn"
    assert off == [f"{p}: notify[1].url_env: $RUN_HOOK is not set; this destination is off"]
    found, off = preset_destinations(watched.notify, {"RUN_HOOK": "https://ntfy.sh/runs"})
    assert [d.service for d in found] == ["slack", "ntfy"] and off == []


@pytest.mark.parametrize(
    "extra, key",
    [
        ("[babysit]\ncadence_minutes = 0\n", "babysit.cadence_minutes"),
        ("[babysit]\nevery = 5\n", "babysit.every"),
        ('[[notify]]\nurl = "https://x.example/h"\nurl_env = "X"\n', "notify[0]"),
        ('[[notify]]\nlevel = "loud"\nurl_env = "X"\n', "notify[0].level"),
        ('[[notify]]\nurl_env = "not a name"\n', "notify[0].url_env"),
        ('[[notify]]\nurl = "ftp://x.example/h"\n', "notify[0].url"),
        ('[[notify]]\nurl_env = "X"\ntoken = "y"\n', "notify[0].token"),
    ],
)
def test_bad_watching_sections_are_one_line(tmp_path: Path, extra: str, key: str) -> None:
    p = tmp_path / "bad.toml"
    p.write_text(Path(load_preset("smoke").path).read_text() + "\n" + extra)
    with pytest.raises(InputError) as err:  # a PresetError, or the URL check's
        load_preset(p)
    assert key in str(err.value) and "\n" not in str(err.value)
