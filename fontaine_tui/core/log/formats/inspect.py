"""What a run folder holds, for writing a preset for a run someone else wrote.

It lists the formats found (each candidate a [source] could name), every key with its steps, the
probe cadence, the last step, whether the run ended, and what could not be read.

Built on the generic reading (locate.py's `files`, cold.py's `load_source`): the run is read
once with every key taken as an eval key (`eval = ["*"]`), so each key's steps and values
are in the store's probes whatever the format; a format added to registry.py's `FORMATS`
shows up here as it is (a store of several runs lists them by its record's `inspect_runs`).
A key is then called train or eval by the default eval patterns. A launched [command] run is
read through its frozen [source] (its patterns and path; candidates.py's `choose`), each key
called train or eval by that [source]'s own eval patterns.

`Inspection.to_json()` is the `inspect --json` document (SCHEMA, version 1):

    {"schema": 1, "folder": str, "format": {"kind", "path", "run", "files": [str],
     "detail"}, "candidates": [{"kind", "path", "run", "describe", "source": [str]}],
     "step_key": str, "loss_key": str | null,
     "keys": [{"key", "role": "eval" | "loss" | "train", "first", "last", "count",
               "nan", "not_number"}],
     "probes": {"keys": [str], "steps": int, "first": int | null, "last": int | null,
                "every": int | null, "off_grid": [int], "describe": str},
     "last_step": int, "ended": {"event": "end" | "error", "step", "detail"} | null,
     "notices": [str]}

`every` is the usual step spacing of the eval keys' steps (null with fewer than two);
`off_grid` the probe steps not on first + k x every; `source` the [source] lines that read
that candidate alone.

On a blinded run before its endpoint (`blinded`), a probe field's `first`, `last`, `count`,
`nan` and `not_number` are null (hidden (blinded)), as the verdict's card says nothing of them:
a NaN, a value not a number or no value at the latest probe reads UNDECIDABLE there. The probe
steps (`probes`) and the train keys' counts stay, as the health they are.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.formats.candidates import Candidate, choose
from fontaine_tui.core.log.formats.cold import Loaded, load_source
from fontaine_tui.core.log.formats.grouper import LOSS_NAMES, FieldMap
from fontaine_tui.core.log.formats.spec import SourceSpec
from fontaine_tui.core.log.records import TRAIN_FIELDS, Event, Probe
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.runfolder import LOG

SCHEMA = 1
# the step field of row formats, by the names writers give it, tried in this order when the
# default ("step") reads nothing
STEP_NAMES = ("step", "global_step", "_step", "iteration", "iter", "trainer/global_step")
# a trainer's own step, logged as a key beside a logger's row counter (W&B's `_step`): preferred
# to that counter where every row holds it, in this order (never an epoch: it is not a step)
TRAINER_STEPS = ("train/global_step", "trainer/global_step", "global_step", "train/step")
ENDS = ("end", "error")
FACTS = ("first", "last", "count", "nan", "not_number")  # a key's, hidden for a blinded probe field


@dataclass(frozen=True, slots=True)
class KeyStats:
    key: str
    role: str  # "eval" (by the default eval patterns), "loss" (the train loss) or "train"
    first: int
    last: int
    count: int  # the steps that hold a value of it
    nan: int  # of those, NaN or an infinity
    not_number: int  # values that were not numbers (a string, a boolean, null)
    steps: tuple[int, ...] = field(default=(), repr=False)  # every step, in order

    def to_json(self, hidden: bool = False) -> dict[str, object]:
        """Its JSON object; `hidden`: its steps and counts null (a blinded probe field)."""
        facts = (self.first, self.last, self.count, self.nan, self.not_number)
        return {
            "key": self.key,
            "role": self.role,
            **dict(zip(FACTS, (None,) * len(FACTS) if hidden else facts, strict=True)),
        }


@dataclass(frozen=True, slots=True)
class ProbeCadence:
    """The steps of the eval keys and their usual spacing."""

    steps: tuple[int, ...]
    every: int  # 0: fewer than two probe steps
    off_grid: tuple[int, ...]  # probe steps not on first + k * every

    @property
    def first(self) -> int | None:
        return self.steps[0] if self.steps else None

    @property
    def last(self) -> int | None:
        return self.steps[-1] if self.steps else None

    def describe(self) -> str:
        if not self.steps:
            return "no eval keys (by the default eval patterns)"
        if not self.every:
            return f"one probe step ({self.steps[0]})"
        text = f"every {self.every} steps from {self.steps[0]} to {self.steps[-1]}"
        if self.steps[0] % self.every:
            text += (
                f" (offset {self.steps[0] % self.every}: logged at a multiple of "
                f"{self.every} minus {self.every - self.steps[0] % self.every})"
            )
        if self.off_grid:
            shown = ", ".join(map(str, self.off_grid[:6]))
            text += f"; off that grid: {shown}{', ...' if len(self.off_grid) > 6 else ''}"
        return text


@dataclass(frozen=True)
class Inspection:
    folder: Path
    chosen: Candidate
    candidates: tuple[Candidate, ...]
    files: tuple[str, ...]
    detail: str
    step_key: str
    loss_key: str  # "" when none of the usual names is there
    keys: tuple[KeyStats, ...]
    cadence: ProbeCadence
    last_step: int
    ended: Event | None
    notices: tuple[str, ...]
    hidden: frozenset[str] = frozenset()  # the probe fields whose FACTS a blind hides
    step_why: str = ""  # which step was read and why, where a trainer's step key was there

    @property
    def eval_keys(self) -> list[str]:
        return [k.key for k in self.keys if k.role == "eval"]

    def stats(self, key: str) -> KeyStats | None:
        return next((k for k in self.keys if k.key == key), None)

    def to_json(self) -> dict[str, object]:
        c = self.cadence
        return {
            "schema": SCHEMA,
            "folder": str(self.folder),
            "format": {
                "kind": self.chosen.kind,
                "path": self.chosen.path,
                "run": self.chosen.run,
                "files": list(self.files),
                "detail": self.detail,
            },
            "candidates": [
                {
                    "kind": x.kind,
                    "path": x.path,
                    "run": x.run,
                    "describe": x.describe,
                    "source": x.source_lines(),
                }
                for x in self.candidates
            ],
            "step_key": self.step_key,
            "loss_key": self.loss_key or None,
            "keys": [k.to_json(k.key in self.hidden) for k in self.keys],
            "probes": {
                "keys": self.eval_keys,
                "steps": len(c.steps),
                "first": c.first,
                "last": c.last,
                "every": c.every or None,
                "off_grid": list(c.off_grid),
                "describe": c.describe(),
            },
            "last_step": self.last_step,
            "ended": (
                {"event": self.ended.event, "step": self.ended.step, "detail": self.ended.detail}
                if self.ended
                else None
            ),
            "notices": list(self.notices),
        }


# -- the read ---------------------------------------------------------------------------------


def inspect_run(
    folder: Path,
    kind: str = "",
    path: str = "",
    run: str = "",
    blinded: bool = False,
    rule: tuple[str, ...] | None = (),
    patterns: tuple[str, ...] = (),
    frozen: SourceSpec | None = None,
) -> Inspection:
    """What `folder` holds, read as the candidate `choose` picks (InputError as it says).

    `frozen`: a launched run's frozen [source] (model/judge.py's `launched_source`): its run is
    the one read unless another is named, and its eval rule says which keys are eval keys.

    `patterns`: its printed lines read with them (kind "lines"; printed.py's, or a set's name).

    `blinded`: the run's read is hidden, as `verdict` hides it: no conflicting step named, the
    eval values not numbers counted, and the FACTS of each probe field (an eval key, or one of
    `rule`, the metrics the frozen rules read; None: not known, so every key) hidden."""
    if patterns and kind not in ("", "lines"):
        raise InputError(f"--patterns: they read printed lines (kind lines), not --kind {kind}")
    chosen, found = choose(folder, "lines" if patterns else kind, path, run, frozen)
    chosen = replace(chosen, patterns=patterns) if patterns else chosen
    read = _inspect_ours if chosen.kind == "fontaine" else _inspect_foreign
    ins = read(folder, chosen, found, blinded)
    if not blinded:
        return ins
    hides = {k.key for k in ins.keys if rule is None or k.role == "eval" or k.key in rule}
    return replace(ins, hidden=frozenset(hides))


def load(folder: Path, chosen: Candidate) -> tuple[Loaded, str]:
    """The run read with every key an eval key, and its step field.

    The step field is "step", else the first of STEP_NAMES that reads keys (a row format written
    with another name for it)."""
    try:
        loaded, error = load_source(folder, chosen.spec()), None
    except InputError as exc:
        loaded, error = None, exc
    if loaded is not None and loaded.keys:
        return loaded, "step"
    for name in STEP_NAMES[1:]:
        try:
            other = load_source(folder, chosen.spec(name))
        except InputError:
            continue
        if other.keys:
            return other, name
    if loaded is None:
        assert error is not None
        raise error
    return loaded, "step"


def trainer_step(
    folder: Path, chosen: Candidate, loaded: Loaded, step_key: str
) -> tuple[Loaded, str, str]:
    """The read at the trainer's own step where a key of TRAINER_STEPS holds it, and why.

    A logger's row counter (W&B's `_step`, a row number) counts log calls, not training steps:
    a preset's anchor and endpoint are the trainer's steps. The trainer's key is taken where it
    reads every row the counter read and is not the counter itself; else the read stays, and
    the why says so ("" where no such key is there)."""
    counter = "W&B's row counter '_step'" if chosen.kind == "wandb" else f"{step_key!r}"
    for name in TRAINER_STEPS:
        if name not in loaded.keys or name == step_key or _is_the_step(loaded, name):
            continue
        try:
            other = load_source(folder, chosen.spec(name))
        except InputError as exc:
            return loaded, step_key, f"{counter} (the trainer's {name!r} does not read: {exc})"
        lost = other.store.malformed_count - loaded.store.malformed_count
        if not other.keys or lost > 0:
            return loaded, step_key, f"{counter} ({lost} row(s) lack the trainer's {name!r})"
        return (
            other,
            name,
            (
                f"{name!r}, the trainer's own step ({_span(other)}), not {counter} ({_span(loaded)}):"
                f" [source] step = {name!r}{_going_back(loaded, other)}"
            ),
        )
    return loaded, step_key, ""


def _going_back(loaded: Loaded, other: Loaded) -> str:
    """Where the trainer's step goes back in the run (a resume the counter read has not): "" none.

    Each is read as a resume, the later rows taking over from their first step; their rows are
    counted in the notices (the decoder's)."""
    backs = other.store.resumes[len(loaded.store.resumes) :]
    if not backs:
        return ""
    shown = ", ".join(f"to step {e.step + 1}" for e in backs[:3])
    more = ", ..." if len(backs) > 3 else ""
    return (
        f"; it goes back {len(backs)} time(s) ({shown}{more}): read as a resume, the later rows"
        " taking over"
    )


def _is_the_step(loaded: Loaded, key: str) -> bool:
    """Whether `key` is the step read at every probe holding it (the counter is the step)."""
    return all(p.fields.get(key, p.step) == p.step for p in loaded.store.probes.values())


def _span(loaded: Loaded) -> str:
    steps = sorted(loaded.store.probes)
    return f"{steps[0]} to {steps[-1]}" if steps else "none"


def _inspect_foreign(
    folder: Path, chosen: Candidate, found: tuple[Candidate, ...], blinded: bool
) -> Inspection:
    loaded, step_key = load(folder, chosen)
    loaded, step_key, why = trainer_step(folder, chosen, loaded, step_key)
    store = loaded.store
    stats = _probe_stats(store, list(loaded.keys), foreign=True, rule=_eval_rule(chosen))
    loss = next((n for n in LOSS_NAMES if n in loaded.keys), "")
    stats = [replace(s, role="loss") if s.key == loss else s for s in stats]
    ins = _inspection(
        folder,
        chosen,
        found,
        tuple(str(p) for p in loaded.files),
        loaded.detail,
        step_key,
        loss,
        stats,
        store,
        blinded,
    )
    return replace(ins, step_why=why)


def _inspect_ours(
    folder: Path, chosen: Candidate, found: tuple[Candidate, ...], blinded: bool
) -> Inspection:
    from fontaine_tui.core.log.read import load_log

    log = folder / LOG
    try:
        store = load_log(log, history=True)
    except OSError as exc:
        raise InputError(f"{log}: cannot read ({exc.strerror or exc})") from None
    stats = [k for name in TRAIN_FIELDS if (k := _train_stats(store, name)) is not None]
    probe_keys: dict[str, None] = {}
    for p in store.probes.values():
        probe_keys.update(dict.fromkeys(p.fields))
        probe_keys.update(dict.fromkeys(k for k, _ in p.not_numbers))
    stats += _probe_stats(store, list(probe_keys), foreign=False)
    paths = (str(log),)
    return _inspection(folder, chosen, found, paths, "", "step", "loss", stats, store, blinded)


def _eval_rule(chosen: Candidate) -> FieldMap:
    """Which keys are eval keys: a launched run's frozen [source]'s rule, else the defaults."""
    return chosen.frozen.fields if chosen.frozen is not None else FieldMap()


def _train_stats(store: RunStore, name: str) -> KeyStats | None:
    """A train column's steps of our own log (those it holds a value at); None: it has none."""
    held = [
        (s, v) for s, v in zip(store.steps, store.columns[name], strict=False) if not math.isnan(v)
    ]
    if not held:
        return None
    return KeyStats(
        name,
        "loss" if name == "loss" else "train",
        held[0][0],
        held[-1][0],
        len(held),
        sum(not math.isfinite(v) for _, v in held),
        0,
        tuple(s for s, _ in held),
    )


def _probe_stats(
    store: RunStore, keys: list[str], foreign: bool, rule: FieldMap | None = None
) -> list[KeyStats]:
    """Each key's steps among the store's probes.

    With `foreign`, its role is set by the eval patterns of `rule` (default: the default ones;
    a probe of our own log is an eval record whatever its fields' names)."""
    defaults = rule if rule is not None else FieldMap()
    probes: list[Probe] = [store.probes[s] for s in sorted(store.probes)]
    out = []
    for key in keys:
        steps, nan, odd = _key_steps(key, probes)
        if not steps:
            continue
        role = "eval" if (defaults.is_eval(key) if foreign else True) else "train"
        out.append(KeyStats(key, role, steps[0], steps[-1], len(steps), nan, odd, tuple(steps)))
    return out


def _key_steps(key: str, probes: list[Probe]) -> tuple[list[int], int, int]:
    """The steps of the probes holding `key`, and its values there not finite and not numbers.

    Returns (steps, how many numbers are NaN or infinite, how many values are not numbers)."""
    steps: list[int] = []
    nan = odd = 0
    for p in probes:
        if key in p.fields:
            steps.append(p.step)
            nan += not math.isfinite(p.fields[key])
        elif any(k == key for k, _ in p.not_numbers):
            steps.append(p.step)
            odd += 1
    return steps, nan, odd


def _inspection(
    folder: Path,
    chosen: Candidate,
    found: tuple[Candidate, ...],
    paths: tuple[str, ...],
    detail: str,
    step_key: str,
    loss: str,
    stats: list[KeyStats],
    store: RunStore,
    blinded: bool,
) -> Inspection:
    evals = {k.key for k in stats if k.role == "eval"}
    probe_steps = tuple(sorted(s for s, p in store.probes.items() if _holds_any(p, evals)))
    ends = [e for e in store.events if e.event in ENDS]
    last = max([store.last_step, *(e.step for e in store.events)], default=0)
    return Inspection(
        folder,
        chosen,
        found,
        paths,
        detail,
        step_key,
        loss,
        tuple(stats),
        cadence(probe_steps),
        last,
        ends[-1] if ends else None,
        tuple(_notices(store, blinded)),
    )


def _holds_any(probe: Probe, keys: set[str]) -> bool:
    """The probe holds a value of one of `keys` (a number or not)."""
    return bool(keys & set(probe.fields) or keys & {k for k, _ in probe.not_numbers})


def cadence(steps: tuple[int, ...]) -> ProbeCadence:
    """The usual spacing of probe steps and the steps off the grid it makes from the first.

    The usual spacing is the commonest gap, the smaller on a tie."""
    if len(steps) < 2:
        return ProbeCadence(steps, 0, ())
    gaps = Counter(b - a for a, b in zip(steps, steps[1:], strict=False))
    every = min(gaps, key=lambda g: (-gaps[g], g))
    off = tuple(s for s in steps if (s - steps[0]) % every)
    return ProbeCadence(steps, every, off)


def _notices(store: RunStore, blinded: bool) -> list[str]:
    """What the read could not take as logged, in words.

    `blinded`: conflicting steps and eval values not numbers counted, not named (a read at
    one is UNDECIDABLE: a class)."""
    out = list(store.notices)
    if odd := store.odd_values.words(blinded):  # counted while blinded, as the conflicts
        out.append(odd)
    if store.malformed_count:
        out.append(f"{store.malformed_count} line(s) could not be read")
    if store.out_of_order_count:
        out.append(f"{store.out_of_order_count} record(s) going back in steps, not applied")
    if store.conflicts:
        steps = ", ".join(str(c.step) for c in store.conflicts[:5])
        said = f"(a verdict read there is UNDECIDABLE): {steps}"
        out.append(
            f"{len(store.conflicts)} step(s) logged twice with other values "
            + ("(the steps hidden (blinded) until the endpoint)" if blinded else said)
        )
    return out
