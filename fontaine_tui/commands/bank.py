"""`fontaine-tui bank` keeps finished runs as comparators and lists and shows them.

`bank add RUN --as NAME` keeps a finished run as a comparator. `bank list` lists the kept
ones, and `bank show NAME[@sha]` shows one.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from fontaine_tui.commands._args import examples, ssh_config
from fontaine_tui.core.bank import store as bank
from fontaine_tui.core.bank.evidence import conflicts
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.follow.base import RunSource
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.follow.open import open_source
from fontaine_tui.core.follow.target import parse_follow_target
from fontaine_tui.core.log.formats.cold import Loaded, load_source
from fontaine_tui.core.log.formats.locate import detect_foreign, frozen_source, record_kind
from fontaine_tui.core.log.formats.registry import kinds, several_runs
from fontaine_tui.core.log.formats.source import SourceSpec
from fontaine_tui.core.log.read import load_lines, load_log
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.checks import UNDECIDABLE
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.run.evidence import (
    FolderEvidence,
    gate_end,
    trail_refusal,
    verdict_of,
)
from fontaine_tui.core.runfolder import (
    AMENDMENTS,
    ATTEMPTS,
    LOG,
    PREREG,
    REVIEW,
    VERDICT,
    RunFolder,
    check_target,
)
from fontaine_tui.core.ssh.destination import SshTarget
from fontaine_tui.core.text import literal, require_utf8
from fontaine_tui.core.verdict import blind
from fontaine_tui.core.verdict.head import head_name
from fontaine_tui.core.verdict.prereg import parse_prereg
from fontaine_tui.core.verdict.record import Verdict
from fontaine_tui.core.verdict.review import TrailFiles
from fontaine_tui.model.judge import blinded

SUBCOMMANDS = ("add", "list", "show")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bank",
        description="The bank keeps finished runs as comparators, in $FONTAINE_BANK (else "
        "$XDG_DATA_HOME/fontaine-tui/bank).",
        epilog=examples(
            "fontaine-tui bank add runs/ref --as ref-2rank",
            "fontaine-tui bank list",
            "fontaine-tui bank show ref-2rank@1a2b3c -j",
            exits="0 done, 2 bad input or nothing banked",
        ),
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    a = actions.add_parser(
        "add",
        help="bank a finished run under a name",
        description="Store a finished run's curves (every probe, a train summary, recipe, "
        "world size, device, code and data identity, its prereg.json) as one canonical JSON "
        "document with its sha256. RUN is a run folder, [user@]host:/path or ssh://...",
        epilog=examples(
            "fontaine-tui bank add runs/ref --as ref-2rank --note 'two ranks'",
            "fontaine-tui bank add gpu1:/runs/r7 --as r7 --replace",
            "fontaine-tui bank add mlruns --as ml --ended --run 3f2a -p my-preset",
            exits="0 banked, 2 bad input or refused (nothing was banked)",
        ),
    )
    a.add_argument("target", metavar="RUN", help="a run folder, [user@]host:/path or ssh://...")
    _add_options(a)
    a.set_defaults(func=run)
    ls = actions.add_parser(
        "list",
        help="list the banked runs",
        description="List the banked runs, and those a preset cannot use.",
        epilog=examples(
            "fontaine-tui bank list", "FONTAINE_BANK=/shared/bank fontaine-tui bank list"
        ),
    )
    ls.set_defaults(func=run_list)
    sh = actions.add_parser(
        "show",
        help="print one banked run",
        description="Print one banked run: NAME's current version, or "
        "NAME@SHA256-PREFIX for an older one.",
        epilog=examples(
            "fontaine-tui bank show ref-2rank",
            "fontaine-tui bank show ref-2rank@1a2b3c",
            "fontaine-tui bank show ref-2rank -j | jq .probes",
            exits="0 shown, 2 no such banked run",
        ),
    )
    sh.add_argument("entry", metavar="NAME[@SHA]", help="a banked name[@sha256 prefix]")
    sh.add_argument("-j", "--json", action="store_true", help="the whole document as JSON")
    sh.set_defaults(func=run_show)


def _add_options(a: argparse.ArgumentParser) -> None:
    a.add_argument(
        "--as", dest="name", metavar="NAME", required=True, help="the name to bank the run under"
    )
    a.add_argument("--note", default="", help="a note kept with the banked run")
    a.add_argument(
        "--replace",
        action="store_true",
        help="make this run the current version of NAME (the old one is kept)",
    )
    a.add_argument(
        "--ended",
        action="store_true",
        help="another trainer's run (TensorBoard, Trainer, CSV, MLflow, JSONL): its "
        "log does not say when it ended; say that it has (a W&B run's exit "
        "says so itself)",
    )
    a.add_argument(
        "--run",
        metavar="NAME",
        default="",
        help="a store holding several runs (MLflow, trackio): the run to bank, by name or id",
    )
    a.add_argument(
        "--kind",
        metavar="KIND",
        default="",
        help="another trainer's run: read it as this [source] kind (a folder holding two "
        "records, as a Trainer's trainer_state.json beside its TensorBoard events, is "
        "banked by the trainer's own record unless named)",
    )
    a.add_argument(
        "-p",
        "--preset",
        metavar="PRESET",
        help="another trainer's run: the preset whose [source] says how to read it "
        "(its eval keys, path, loss key), so the banked probes hold the keys "
        "that preset reads",
    )
    a.add_argument(
        "--even-if-conflicting",
        action="store_true",
        help="bank a run whose own evidence conflicts (two probes for one step, "
        "malformed or out-of-order lines, its own verdict UNDECIDABLE) all the "
        "same, marked: a preset that uses it refuses to load",
    )
    ssh_config(a)


def legacy(rest: list[str]) -> list[str]:
    """`bank RUN --as NAME` (before `bank add`): taken for one more release, with a note."""
    if not rest or rest[0] in (*SUBCOMMANDS, "-h", "--help"):
        return rest
    print(
        "fontaine-tui: `bank RUN --as NAME` is deprecated and will be removed in the next "
        "release: use `bank add RUN --as NAME`",
        file=sys.stderr,
    )
    return ["add", *rest]


def run_list(args: argparse.Namespace) -> int:
    rows = [
        f"{e.name:<24}{e.sha256[:12]}  {len(e.probes()):>4} probes  "
        f"{len(bank.versions(e.name))} version(s)  {e.where()}"
        + ("  MARKED: conflicting evidence" if e.marked else "")
        for e in bank.entries()
    ]
    bad = bank.unusable()
    if not rows:
        rows = [
            f"nothing usable banked in {bank.bank_dir()}"
            if bad
            else f"nothing banked in {bank.bank_dir()}"
        ]
    rows += [
        f"{name:<24}not listed (a preset naming it is refused): {literal(why)}" for name, why in bad
    ]
    sys.stdout.write("\n".join(rows) + "\n")
    return 0


def run_show(args: argparse.Namespace) -> int:
    entry = bank.get(args.entry)
    if args.json:
        sys.stdout.write(json.dumps(entry.doc, indent=2, sort_keys=True) + "\n")
        return 0
    probes = entry.probes()
    doc = entry.doc
    sys.stdout.write(
        f"{entry.name}  sha256 {entry.sha256}{'' if entry.current else '  (not current)'}\n"
        f"source {doc.get('source')}  run {doc.get('run')}  {entry.where()}\n"
        f"probes at steps {', '.join(map(str, probes)) or 'none'}\n"
        + (f"note: {doc.get('note')}\n" if doc.get("note") else "")
        + "".join(f"marked: {why}\n" for why in entry.marked)
    )
    return 0


def run(args: argparse.Namespace) -> int:
    target, ssh = args.target, getattr(args, "ssh_config", None)
    bank.check_name(args.name)
    target = check_target(target)
    require_utf8(args.note, "--note")
    store, prereg, ctx, label, kind = asyncio.run(
        _read(target, ssh, args.run, args.preset, args.kind)
    )
    refused = trail_refusal(ctx.review, "nothing was banked")
    if refused:  # as `verdict` refuses it
        raise InputError(refused)
    stopped = gate_end(store, ctx)  # the run's end, as the verdict reads it
    finished = _finished_here(ctx, prereg, store)
    if kind and not args.ended:
        _refuse_unended(label, store, stopped, finished)
    doc = bank.document(store, label, args.note, prereg, kind, stopped, finished)
    own = _own_verdict(store, prereg, ctx, label)
    reasons = _conflicts(store, own)
    _refuse_hidden(target, own)  # before a conflict's words, which may name the hidden read
    if reasons and not args.even_if_conflicting:
        raise InputError(
            f"{label}: its own evidence conflicts: {'; '.join(reasons)}; nothing "
            "was banked (--even-if-conflicting banks it marked, and no preset "
            "will derive a bound from it)"
        )
    if reasons:
        doc = bank.mark(doc, reasons)
    entry, done = bank.put_whole(args.name, doc, args.replace)
    marked = " (MARKED: its own evidence conflicts)" if entry.marked else ""
    print(
        f"{done} {literal(label)} as {entry.name}{marked}: sha256 {entry.sha256} "
        f"({len(entry.probes())} probes, {entry.where()}) in {bank.bank_dir() / entry.name}"
    )
    return 0


def _refuse_unended(label: str, store: RunStore, stopped: int | None, finished: int | None) -> None:
    """Refuse another trainer's run that has not ended: no end record, gate stop or last attempt.

    Its log may yet grow (--ended says it has ended)."""
    if store.ended_at is None and stopped is None and finished is None:
        raise InputError(
            f"{label}: another trainer's run: its log does not say it ended; "
            "bank it with --ended once it has"
        )


def _refuse_hidden(target: str, own: tuple[Preset, Verdict] | None) -> None:
    """Refuse a blinded run whose read is still hidden, unless a look at it is on record.

    The bank would keep every probe, and `bank show -j` print them. A run here is read as
    `verdict` reads it (model/judge.py's `blinded`, with its review trail); a run over SSH by
    its own verdict `own` (`_own_verdict`: its prereg.json and folder evidence, its review
    trail read from its host, through the evidence gate), which `blind.hidden` holds as here.
    A blinded run's log may end before its endpoint (a crash), where the gate withholds the
    read. A look recorded in its trail on its host counts over SSH as it counts there."""
    far = parse_follow_target(target)
    if isinstance(far, SshTarget):
        if own is None or not blind.hidden(*own):
            return
        v = own[1]
        unhide = f"once a look is recorded on its host ({blind.unblind_hint(far.path)})"
    else:
        hidden = blinded(target)
        if hidden is None:
            return
        v = hidden.verdict
        unhide = f"once a look is recorded ({blind.unblind_hint(target)})"
    if blind.looked_at(v):
        return
    why = v.withheld or f"the read is blinded until the endpoint (step {v.endpoint_step})"
    raise InputError(
        f"{target}: {why}, and the bank would keep every probe: bank it after the endpoint, "
        f"or {unhide}; nothing was banked"
    )


def _own_verdict(
    store: RunStore, prereg: bytes | None, ctx: FolderEvidence, label: str
) -> tuple[Preset, Verdict] | None:
    """The run's own verdict and the preset it froze (None without a prereg.json).

    It is read by its prereg.json and the folder's evidence `ctx` (its amendments, a gate's
    stop, the restarts), through the evidence gate, as `verdict` reads it."""
    if prereg is None:
        return None
    frozen = parse_prereg(prereg, f"{label}/{PREREG}")
    preset = frozen.frozen_preset(f"{label}/{PREREG}")
    return preset, verdict_of(store, preset, replace(ctx, provenance=frozen.provenance))


def _conflicts(store: RunStore, own: tuple[Preset, Verdict] | None) -> list[str]:
    """What in the run's own evidence conflicts, in words.

    These are the log's own contradictions, and its own verdict (`_own_verdict`) when
    UNDECIDABLE."""
    reasons = conflicts(store)
    if own is not None and own[1].verdict == UNDECIDABLE:
        reasons.append(f"its own verdict is UNDECIDABLE: {own[1].reason}")
    return reasons


async def _read(
    target: str,
    ssh_config: str | None,
    run: str = "",
    preset_arg: str | None = None,
    kind_arg: str = "",
):
    """Read the whole log, prereg.json and the folder's evidence of a run.

    The log includes its rotated segments when local. All are read through the same sources
    the console follows. The folder's evidence (its amendments ledger, attempts.jsonl and its
    review trail, here or from its host) is read by the evidence gate as `verdict` reads it: a
    ledger or a trail that does not hold is refused, naming its line. Another trainer's run is
    read as `preset_arg`'s [source] says, when given, else as `kind_arg` names, else as its
    folder's contents say (record_kind: a Trainer's own record over its TensorBoard events).
    `run` picks the run of a store that holds several (MLflow, trackio), over the preset's
    choice.
    """
    if kind_arg:
        _check_kind(kind_arg, preset_arg)
    source = open_source(target, ssh_options=("-F", ssh_config) if ssh_config else ())
    try:
        prereg = await source.read_bytes(PREREG)
        ctx = await _evidence(source, prereg)
        if isinstance(source, LocalRun):
            store, label, kind = _read_here(source.folder, prereg, run, preset_arg, kind_arg)
        else:
            store, label, kind = await _read_there(source, run, preset_arg, kind_arg)
        return store, prereg, ctx, label, kind
    finally:
        await source.close()


async def _evidence(source: RunSource, prereg: bytes | None) -> FolderEvidence:
    """The folder's evidence: read from the folder here, else from the bytes of its host."""
    if isinstance(source, LocalRun):
        return FolderEvidence.of_folder(RunFolder(source.folder))
    # the ledger, its head file (how long the chain was), attempts.jsonl and the review trail
    # with the files it is held to (its head, verdict.json), as bytes
    return FolderEvidence.of_files(
        prereg,
        None,
        await source.read_bytes(AMENDMENTS),
        await source.read_bytes(head_name(AMENDMENTS)),
        await source.read_bytes(ATTEMPTS),
        source.label,
        strict=True,
        trail=TrailFiles(
            source.label,
            await source.read_bytes(REVIEW) or b"",
            await source.read_bytes(head_name(REVIEW)),
            prereg,
            await source.read_bytes(VERDICT),
        ),
    )


def _read_here(
    folder: Path, prereg: bytes | None, run: str, preset_arg: str | None, kind_arg: str
) -> tuple[RunStore, str, str]:
    """A run in a folder here: its store, its label and the kind read ("" for ours)."""
    log = folder / LOG
    if not log.is_file():  # another trainer's run: read through its format
        loaded = _read_foreign(folder, prereg, run, preset_arg, kind_arg)
        return loaded.store, loaded.label, loaded.kind
    given = _reading_option(run, preset_arg, kind_arg)
    if given:
        raise InputError(
            f"--{given}: {folder} is a run of this console's (its own log and prereg.json "
            "say how to read it)"
        )
    return load_log(log, history=True), str(folder), ""


async def _read_there(
    source: RunSource, run: str, preset_arg: str | None, kind_arg: str
) -> tuple[RunStore, str, str]:
    """One of this console's runs, read over SSH: its store, its label and "" for its kind."""
    given = _reading_option(run, preset_arg, kind_arg)
    if given:
        raise InputError(
            f"--{given}: {source.label} is read over SSH as one of this console's runs "
            "(another trainer's run is banked on its own host)"
        )
    raw = await source.read_bytes(LOG)
    if raw is None:
        raise InputError(f"{source.label}/{LOG}: no such log")
    return load_lines([raw], final=True), source.label, ""


def _reading_option(run: str, preset_arg: str | None, kind_arg: str) -> str:
    """The first option given that says how to read another trainer's run ("" for none)."""
    given = {"run": bool(run), "kind": bool(kind_arg), "preset": preset_arg is not None}
    return next((name for name, on in given.items() if on), "")


def _read_foreign(
    folder: Path, prereg: bytes | None, run: str, preset_arg: str | None, kind_arg: str
) -> Loaded:
    """Another trainer's run here: by the preset, else as its prereg.json froze, else by kind.

    A launched [command]'s run is read as its prereg.json froze its [source]."""
    if preset_arg is not None:
        return _by_preset(folder, preset_arg, kind_arg or record_kind(folder), run)
    frozen = frozen_source(prereg, str(folder / PREREG)) if prereg is not None else None
    kind = _foreign_kind(folder, frozen, kind_arg)
    if run and kind not in several_runs():
        raise InputError(
            f"--run: a {kind} run holds one run (expected only for a store holding several: "
            f"{', '.join(several_runs())})"
        )
    return load_source(folder, _with_run(frozen or SourceSpec(kind), run))


def _foreign_kind(folder: Path, frozen: SourceSpec | None, kind_arg: str) -> str:
    """The format another trainer's run here is read as: frozen, named by --kind, or found."""
    if frozen is not None and kind_arg and kind_arg != frozen.kind:
        raise InputError(
            f'--kind: {folder} is read as its prereg.json froze ([source] kind = "{frozen.kind}")'
        )
    kind = frozen.kind if frozen else kind_arg or record_kind(folder)
    if frozen is None and not kind_arg:
        _other_record(folder, kind)
    if not kind:
        raise InputError(f"{folder / LOG}: no such log")
    return kind


def _with_run(spec: SourceSpec, run: str) -> SourceSpec:
    """`spec` reading the store's run `run` (bank's --run) over its own choice, when given."""
    if not run:
        return spec
    return dataclasses.replace(spec, options=MappingProxyType({**spec.options, "run": run}))


def _check_kind(kind: str, preset_arg: str | None) -> None:
    """--kind names another trainer's [source] kind, and is not given with --preset."""
    if preset_arg is not None:
        raise InputError("--kind: the preset's [source] says how to read the run; name one")
    foreign = [k for k in kinds() if k != "fontaine"]  # ours is read by its own log
    if kind not in foreign:
        raise InputError(f"--kind: expected one of {', '.join(foreign)}, got {kind!r}")


def _other_record(folder: Path, kind: str) -> None:
    """Say the other record a folder holds when it is not the one banked.

    A Trainer's output folder holds its trainer_state.json and, reporting to TensorBoard, its
    events: the Trainer's own is banked (its keys, as an hf_trainer preset reads them)."""
    if kind == "hf_trainer" and detect_foreign(folder) == "tensorboard":
        sys.stderr.write(
            literal(
                f"note: {folder} holds the Trainer's own trainer_state.json and TensorBoard "
                "events: its trainer_state.json is banked (keys as eval_loss); --kind "
                "tensorboard banks the events (keys as eval/loss)"
            )
            + "\n"
        )


def _finished_here(ctx: FolderEvidence, prereg: bytes | None, store: RunStore) -> int | None:
    """The step a run this console launched (a [command]) finished at, by its last attempt.

    Its end is known from attempts.jsonl (as the evidence gate read it) although its trainer's
    log does not say it: the attempt's last step, else (a record naming none) the log's. None
    when it is no such run or its last attempt did not finish.
    """
    last = ctx.attempts[-1] if ctx.attempts else None
    if prereg is None or last is None or not last.ended or last.cause != "finished":
        return None
    return last.last_step if last.last_step is not None else store.last_step


def _by_preset(folder, preset_arg: str, kind: str, run: str = ""):
    """Another trainer's run, read as the preset's [source] says, else as detected.

    The preset's metric is checked to be there, so this is what a preset reading this run
    reads. `run` is taken over the [source]'s own choice of run.
    """
    preset = load_preset(preset_arg)
    spec = preset.source if preset.source and preset.source.kind != "fontaine" else None
    if spec is None and not kind:
        raise InputError(
            f"{folder}: no log this console reads, and --preset {preset_arg} has "
            "no [source] saying where it is"
        )
    spec = _with_run(spec or SourceSpec(kind), run)
    loaded = load_source(folder, spec)
    for metric in (preset.verdict.metric, *(r.metric for r in preset.verdict.secondary)):
        loaded.check_metric(metric, spec)
    return loaded
