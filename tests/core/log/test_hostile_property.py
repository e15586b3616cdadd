"""Property: logs generated from a grammar of valid records plus the hostile faults (boolean
and huge metrics, duplicate probes with and without a resume, steps going back, records after
the end, a meta record of another run, bare-CR line ends, deep nesting, junk) never make the
reader raise, and never give a final label that the clean subset of the log would not give."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fontaine_tui.core.log.read import load_lines
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.verdict.rules import compute_verdict
from fontaine_tui.core.verdict.text import render
from tests.logs import T0, dumps, meta, probe, train
from tests.profiles import examples

PRESET = load_preset("demosonly_1gpu")
PROBE_STEPS = (250, 500, 750, 1000)
STEPS = 1000

level = st.floats(min_value=2.0, max_value=14.0, allow_nan=False)


def _clean(values: dict[int, tuple[float, float]], ended: bool) -> list[dict]:
    out = [meta(), {"kind": "event", "step": 0, "time": T0, "event": "start", "detail": ""}]
    for s in range(1, STEPS + 1):
        out.append(train(s, T0 + s))
        if s in values:
            out.append(probe(s, T0 + s + 0.1, *values[s]))
        if s % 500 == 0:
            out.append({"kind": "checkpoint", "step": s, "time": T0 + s, "path": f"ck/{s}"})
    if ended:
        out.append(
            {
                "kind": "event",
                "step": STEPS,
                "time": T0 + STEPS + 1,
                "event": "end",
                "detail": "finished",
            }
        )
    return out


def _fault(kind: str, step: int, value: float) -> str:
    """One injected line of the given fault kind (never part of the clean subset)."""
    if kind == "bool":
        return dumps({**probe(step, T0, 1.0, 1.0), "eval_chunk_mae": True})
    if kind == "huge-int":
        return dumps(probe(step, T0, 1.0, 1.0)).replace(
            '"eval_chunk_mae": 1.0', '"eval_chunk_mae": 1' + "0" * 400
        )
    if kind == "huge-float":
        return dumps(probe(step, T0, 1e308 if value > 8 else -1e308, 1.0))
    if kind == "other-probe":  # a different value for a probe step, no resume
        return dumps(probe(step, T0 + 5000, value, value))
    if kind == "rewind":
        return dumps(train(step, T0 + 6000))
    if kind == "resume":  # a resume going back, anywhere in the log (after the end: refused)
        return dumps(
            {
                "kind": "event",
                "step": step - 100,
                "time": T0,
                "event": "resume",
                "detail": "from an older checkpoint",
            }
        )
    if kind == "meta":
        return dumps(meta(step=step, run="another-run", world_size=8))
    if kind == "float-step":
        return json.dumps(
            {"kind": "eval", "step": float(step), "time": T0, "eval_chunk_mae": value}
        )
    if kind == "deep":
        return "[" * 50_000 + "]" * 50_000
    return "{torn junk"


FAULTS = (
    "bool",
    "huge-int",
    "huge-float",
    "other-probe",
    "rewind",
    "resume",
    "meta",
    "float-step",
    "deep",
    "junk",
)


@st.composite
def hostile_logs(draw):
    values = {
        s: (draw(level), draw(level))
        for s in PROBE_STEPS
        if draw(st.booleans()) or s in (500, 1000)
    }
    ended = draw(st.booleans())
    clean = [dumps(r) for r in _clean(values, ended)]
    # a fault names a step the clean log probed: a probe at a step it lacks is new evidence,
    # not a fault (its worth is the clean reader's business)
    faults = draw(
        st.lists(
            st.tuples(
                st.sampled_from(FAULTS),
                st.sampled_from(sorted(values)),
                level,
                st.integers(0, len(clean)),
            ),
            max_size=6,
        )
    )
    lines = list(clean)
    for kind, step, value, where in sorted(faults, key=lambda f: -f[3]):
        lines.insert(where, _fault(kind, step, value))
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    data = "".join(line + ending for line in lines).encode()
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=4)))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    return clean, chunks, faults


@settings(
    max_examples=examples(120),
    database=None,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(hostile_logs(), st.booleans())
def test_faults_never_raise_and_never_give_a_final_label_the_clean_log_would_not(case, lean):
    clean_lines, chunks, faults = case
    store = load_lines(chunks, _store(lean), final=True)
    got = compute_verdict(store, PRESET)
    render(got, "hostile")
    json.dumps(got.to_json(), allow_nan=False)
    ref = compute_verdict(load_lines([("\n".join(clean_lines) + "\n").encode()]), PRESET)
    if not got.provisional and got.verdict != "UNDECIDABLE":
        assert not ref.provisional and got.verdict == ref.verdict, (faults, got.reason, ref.reason)


def _store(lean: bool):
    from fontaine_tui.core.log.store import RunStore

    return RunStore(has_columns=not lean)
