"""Property: every surface that says a run's read agrees with `fontaine-tui verdict`, or hides it
where the verdict hides it.

Each example is a run folder frozen from demosonly_1gpu with random settings: blind or not,
a decision lock's premise (`max_probe_change`) or none, `[gates] stop_on_lock` or not, a scale
amendment declared with `fontaine-tui amend` partway through or none, a restart (a resume to
the last checkpoint, as [recovery] makes one) or none, random probe values, and cut at a random
point: before the endpoint, at it, stopped by the engine's end event, or stopped by the gate
with only attempts.jsonl saying so. One probe may be hostile: its eval_chunk_mae a boolean,
null or a string, or the probe logged twice (a second line with another number, or one line
naming the key twice, a number then a boolean). The surfaces are the
commands a user or a script reads a run through: `verdict --json` (the reference),
`replay --plain` and `attach --plain --until-end` (their last verdict line and their exit code),
`get --json` (the probe values as the verdict read them, naming a value that is not a number or
a conflict where the verdict does; or a refusal naming the blind), `seal` then `verify` (the
verdict recomputed from the bundle), `runs -j` (the runs list's read), and `bank add` then
`bank show -j` (a run banked only when its reads may be seen)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fontaine_tui.cli import main
from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.verdict.blind import EXIT_BLINDED
from fontaine_tui.core.verdict.prereg import freeze
from fontaine_tui.core.verdict.record import EXIT_CODES, PROVISIONAL_OFFSET
from tests.commands.test_get_agrees import assert_agree
from tests.core.launch.conftest import without_amendments
from tests.logs import dumps, meta, probe, train
from tests.profiles import examples

STEPS = (250, 500, 750, 1000)
level = st.sampled_from((3.0, 3.1, 3.2, 3.35, 3.5, 3.8, 4.2))
# what a hostile probe logs at eval_chunk_mae: a value that is not a number, another number on
# a second line, or one line naming the key twice, a number then a boolean
HOSTILE = ("true", "null", "string", "another line", "key twice")


@st.composite
def runs(draw: st.DrawFn) -> dict[str, object]:
    return {
        "blind": draw(st.booleans()),
        "lock": draw(st.sampled_from((None, 0.05, 0.2))),
        "stop_on_lock": draw(st.booleans()),
        "amend": draw(
            st.sampled_from(
                (
                    None,
                    ("--scale-factor", "1.25"),
                    ("--scale-factor", "3.0"),
                    ("--extend-to", "1250"),
                )
            )
        ),
        "restart": draw(st.booleans()),
        "values": {s: draw(level) for s in STEPS},
        "hostile": draw(st.none() | st.tuples(st.sampled_from(STEPS), st.sampled_from(HOSTILE))),
        "cut": draw(st.sampled_from((600, 760, 1000, "stopped-760", "stopped-510", "gated-760"))),
    }


def write_preset(where: Path, run: dict[str, object]) -> Path:
    text = without_amendments(where).read_text()
    if run["blind"]:
        text = text.replace("[verdict]\n", "[verdict]\nblind = true\n", 1)
    if run["lock"] is not None:
        text = text.replace(
            "drift_min = 1.0158", f"drift_min = 1.0158\nmax_probe_change = {run['lock']}"
        )
    if run["stop_on_lock"]:
        text = text.replace("[gates]\n", "[gates]\nstop_on_lock = true\n", 1)
    path = where / "p.toml"
    path.write_text(text)
    return path


def records(run: dict[str, object], upto: int, t0: float) -> list[dict[str, object]]:
    """The run's records to step `upto`, logged from `t0`, half a second a step; with a
    restart, killed at 600 and resumed from 500."""
    values: dict[int, float] = run["values"]  # type: ignore[assignment]
    out: list[dict[str, object]] = [
        meta(t=t0),
        {"kind": "event", "step": 0, "time": t0, "event": "start"},
    ]
    parts = [range(1, upto + 1)]
    if run["restart"] and upto > 600:
        parts = [range(1, 601), range(501, upto + 1)]
    t = t0
    for k, part in enumerate(parts):
        if k:
            out.append({"kind": "event", "step": 500, "time": t, "event": "resume"})
        for s in part:
            t += 0.5
            out.append(train(s, t))
            if s in values:
                out += hostile(probe(s, t + 0.1, values[s], values[s] + 0.1), run.get("hostile"))
            if s % 500 == 0:
                out.append({"kind": "checkpoint", "step": s, "time": t, "path": f"step-{s:06d}"})
    return out


def hostile(rec: dict[str, object], how: object) -> list[dict[str, object]]:
    """The probe `rec` as logged, or as the run's hostile probe (`how`: a step and a HOSTILE)."""
    if not isinstance(how, tuple) or how[0] != rec["step"]:
        return [rec]
    value = rec["eval_chunk_mae"]
    what = how[1]
    if what == "another line":
        return [rec, {**rec, "eval_chunk_mae": float(value) + 1.0}]  # type: ignore[arg-type]
    if what == "key twice":  # the text names the key twice: json.dumps cannot, so written here
        text = dumps(rec)
        return [{**rec, RAW: text[:-1] + ', "eval_chunk_mae": true}'}]
    return [{**rec, "eval_chunk_mae": {"true": True, "null": None, "string": "n/a"}[what]}]


RAW = "raw line"  # a record written as this text instead of as JSON


def line(rec: dict[str, object]) -> str:
    raw = rec.get(RAW)
    return str(raw) if raw is not None else dumps(rec)


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def make(where: Path, run: dict[str, object]) -> Path:
    preset = load_preset(write_preset(where, run))
    root = where / "run"
    root.mkdir()
    freeze(RunFolder(root), preset, ["fontaine-tui", "launch", "p"], "test-host")
    log = root / "train_log.jsonl"
    cut = run["cut"]
    upto = int(str(cut).removeprefix("stopped-").removeprefix("gated-"))
    # the log's own clock: step 300 logged before now, when an amendment is declared, and the
    # anchor (500) after it, so the amendment is on time by the log's clock
    t0 = time.time() - 200
    recs = records(run, upto, t0)
    if run["amend"] is not None:  # declared once step 300 is seen, before the anchor at 500
        early = [r for r in recs if r["time"] <= t0 + 300 * 0.5 + 0.2]
        log.write_text("".join(line(r) + "\n" for r in early))
        code, _, err = cli("amend", str(root), *run["amend"], "--text", "t")  # type: ignore[misc]
        assert code in (0, 1), err
    end: list[dict[str, object]] = []
    if cut == 1000:
        end = [
            {"kind": "event", "step": 1000, "time": t0 + 1e4, "event": "end", "detail": "finished"}
        ]
    elif str(cut).startswith("stopped-"):
        end = [{"kind": "event", "step": upto, "time": t0 + 1e4, "event": "end",
                "detail": f"stopped by SIGINT at step {upto}"}]  # fmt: skip
    log.write_text("".join(line(r) + "\n" for r in [*recs, *end]))
    if str(cut).startswith("gated-"):  # a log that never says its end: attempts.jsonl does
        gate_stop(root, upto, 500)
    return root


def gate_stop(root: Path, step: int, checkpoint: int) -> None:
    """attempts.jsonl of a run the stop_on_lock gate stopped at `step` (on another host)."""
    attempts = [
        {"event": "begin", "attempt": 1, "kind": "launch", "pid": 999999,
         "pid_started": 1.0, "host": "elsewhere", "at": "2026-12-07T00:00:00Z",
         "log_offset": 0, "out_offset": 0, "cgroup": None,
         "vmstat_oom_kill_at_start": None},
        {"event": "end", "attempt": 1, "cause": "decision-locked",
         "detail": "decision locked", "status": "stopped", "last_step": step,
         "checkpoint_step": checkpoint, "exit_code": 0, "signal": "SIGINT",
         "at": "2026-12-07T00:10:00Z", "memory": None},
    ]  # fmt: skip
    (root / "attempts.jsonl").write_text("".join(json.dumps(a) + "\n" for a in attempts))


def last_verdict_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.startswith("verdict: ")]
    return lines[-1] if lines else ""


def probe_values(run: dict[str, object]) -> set[str]:
    """Each probe value as a surface would print it, a hostile probe's other number too, and
    the words that say what a hostile probe logged instead of a number."""
    values: dict[int, float] = run["values"]  # type: ignore[assignment]
    logged = list(values.values())
    how = run.get("hostile")
    if isinstance(how, tuple) and how[1] == "another line":
        logged.append(values[how[0]] + 1.0)
    said = {"boolean)", "boolean),", "('n/a')", "('n/a'),"} if isinstance(how, tuple) else set()
    return {f"{v:.4f}" for v in logged} | {f"{v}" for v in logged} | said


@pytest.fixture
def isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    base = tmp_path_factory.mktemp("agree")
    monkeypatch.setenv("FONTAINE_BANK", str(base / "bank"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "cfg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "state"))
    monkeypatch.setenv("FONTAINE_USER", "alice")
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)
    monkeypatch.delenv("FONTAINE_REGISTRY", raising=False)
    return base


@settings(
    max_examples=int(os.environ.get("FONTAINE_AGREE_EXAMPLES") or examples(25)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(run=runs())
def test_every_surface_agrees_with_the_verdict(isolated: Path, run: dict[str, object]) -> None:
    where = Path(os.path.join(isolated, f"r{len(os.listdir(isolated))}"))
    where.mkdir()
    root = make(where, run)

    code, out, err = cli("verdict", str(root), "--json")
    assert code != 70 and "internal error" not in err, err
    doc = json.loads(out)
    hidden = bool(doc.get("blinded"))
    if hidden:
        assert code == EXIT_BLINDED
        # provisional until the endpoint; a read withheld past it (a broken ledger, an end
        # before the endpoint) is neither provisional nor final, and says why
        label, provisional = "BLINDED", bool(doc["provisional"])
        assert provisional or doc.get("withheld"), doc
        assert not probe_values(run) & set(out.split()), out
    else:
        label, provisional = str(doc["verdict"]), bool(doc["provisional"])
        assert code == EXIT_CODES[label] + (PROVISIONAL_OFFSET if provisional else 0)

    # the plain followers: their last verdict line and their exit code
    for args in (("replay", str(root), "--plain"), ("attach", str(root), "--plain", "--until-end")):
        if args[0] == "attach" and run["cut"] in (600, 760):
            continue  # the run has not ended: attach --until-end would follow for ever
        got, text, err = cli(*args)
        line = last_verdict_line(text)
        assert line.startswith(f"verdict: {label} "), (args, line, doc.get("reason"))
        assert got == code, (args, got, code, line)
        if hidden:
            assert not probe_values(run) & set(text.replace(",", " ").split()), args

    # get: the probe values as the log holds them, or a refusal naming the blind
    got, text, err = cli("get", str(root), "--metric", "eval_chunk_mae", "--json")
    if hidden:
        assert (
            got == EXIT_BLINDED and "blinded" in err and not probe_values(run) & set(text.split())
        )
    else:
        assert got == 0, err
        assert_agree(doc, json.loads(text), err)

    # seal, then verify: the bundle's verdict is the verdict
    bundle = where / "b.zip"
    got, text, err = cli("seal", str(root), "-o", str(bundle))
    if hidden:
        assert got == 2 and not bundle.exists(), (text, err)
    else:
        assert got == 0, err
        got, text, err = cli("verify", str(bundle))
        assert got == 0 and "broken" not in text, (text, err)

    # runs -j: the read the runs list shows, PROVISIONAL until the endpoint
    registry = where / "registry.toml"
    Registry(registry).upsert(
        Entry(name=where.name, run_dir=str(root), host=hostname(), pid=0, preset="p")
    )
    os.environ["FONTAINE_REGISTRY"] = str(registry)
    try:
        got, text, err = cli("runs", "-j")
    finally:
        del os.environ["FONTAINE_REGISTRY"]
    assert got == 0, err
    [row] = [json.loads(line) for line in text.splitlines()]
    shown = ("PROVISIONAL " if provisional else "") + label
    assert row["read"] == shown, (row["read"], shown, doc.get("reason"))

    # bank add: only a finished run whose reads may be seen and decide, and whose own evidence
    # holds together (two probes for one step anywhere it logged refuse it)
    got, text, err = cli("bank", "add", str(root), "--as", f"x{where.name}")
    # bank add takes the run's end as the verdict does: the log's own, or the gate's stop
    # attempts.jsonl records (the log reached it)
    finished = run["cut"] == 1000 or str(run["cut"]).startswith(("stopped-", "gated-"))
    upto = int(str(run["cut"]).removeprefix("stopped-").removeprefix("gated-"))
    how = run["hostile"]
    twice = isinstance(how, tuple) and how[0] <= upto and how[1] in ("another line", "key twice")
    if hidden or not finished or label == "UNDECIDABLE" or twice:
        assert got == 2, (text, err)
    else:
        assert got == 0, err
        got, text, err = cli("bank", "show", f"x{where.name}", "-j")
        assert got == 0, err
