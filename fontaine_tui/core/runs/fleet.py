"""The fleet: every registered run checked live, hosts in parallel, each within a deadline.

One poll per host: one command (a POSIX sh script, `FLEET_SCRIPT`) that reports, for each of
that host's run folders, whether its pid is there, its prereg.json, its probe and meta lines
and the last 32 KiB of its log. Here it runs under `sh`; on another host over SSH, through
one multiplexed connection per host (ControlMaster in the state folder, kept a few minutes,
so the next poll reuses it). What each run reads like is computed here from those bytes,
with the run's frozen preset: step/total, s/step, the last probe and the read against the
bounds, GPU-hours, warnings.

A host that does not answer within the deadline is not waited for: its rows are the last
good reading (kept in `fleet.json` beside the registry) with its age, or "no reading".

Its size: one concept over some 900 lines, the look at a host. The script, the parsing of its
reply and each row read from it change together (a part the script sends is a part a row
reads), so they are kept in one module.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import math
import os
import shlex
import signal
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fontaine_tui.core import tomlfile
from fontaine_tui.core.atomic import atomic_write
from fontaine_tui.core.childenv import child_env
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.log.store import RunStore
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.readfile import read_text
from fontaine_tui.core.run.endpoint import planned_steps
from fontaine_tui.core.run.evidence import FolderEvidence, seen_probes, verdict_of
from fontaine_tui.core.runfolder import LOG, RunFolder
from fontaine_tui.core.runs.registry import Entry
from fontaine_tui.core.ssh.control import shared_control_folder
from fontaine_tui.core.ssh.destination import check_destination
from fontaine_tui.core.verdict.blindwords import rule_metrics

if TYPE_CHECKING:
    from fontaine_tui.core.run.attached import AttachedRead
    from fontaine_tui.core.verdict.record import Verdict

DEADLINE_S = 1.8  # the whole table, every host included
TAIL = 32 << 10
LEDGER = 4 << 20  # bytes of a run's ledger (and attempts.jsonl) sent over SSH, at most
EVALS = 5000  # the log's last probe, meta and event lines read; with more, no read is shown
# a run on this host that the lines above cannot read (rotated segments, more lines) is read
# whole, as `verdict` reads it, where its log and segments hold at most this many bytes and
# lines (decompressed), while the look is inside its deadline: at most about 1 s on one core,
# if every line were one the reader cannot parse (bench/fleet_whole.py); larger, its row shows
# no read and says why
WHOLE_BYTES = 16 << 20
WHOLE_LINES = 30_000
MARK = "@@fontaine-fleet"
FLEET_SCRIPT = (
    r"""
n=0
while [ "$#" -ge 2 ]; do
  d=$1; pid=$2; shift 2
  a=0; case $pid in
    job:*) j=${pid#job:}
      case $j in ''|*[!0-9]*) ;; *) [ -n "$(squeue -h -j "$j" -o %T 2>/dev/null)" ] && a=1 ;; esac ;;
    ''|*[!0-9]*) ;;
    *) [ "$pid" -gt 0 ] && [ -d "/proc/$pid" ] && a=1 ;;
  esac
  e=0; [ -d "$d" ] && e=1
  printf '\n%s run %s %s %s\n' "$MARK" "$n" "$a" "$e"
  printf '%s prereg\n' "$MARK"; [ -f "$d/prereg.json" ] && cat -- "$d/prereg.json" 2>/dev/null
  for f in prereg.json amendments.jsonl amendments.jsonl.head attempts.jsonl; do
    printf '\n%s file %s\n' "$MARK" "$f"
    [ -f "$d/$f" ] && head -c LEDGER -- "$d/$f" | base64 2>/dev/null
  done
  r=0; for x in "$d"/train_log.jsonl.[0-9]*; do [ -e "$x" ] && r=1 && break; done
  printf '\n%s segments %s\n' "$MARK" "$r"
  printf '\n%s evals\n' "$MARK"
  l=$d/train_log.jsonl; [ -f "$l" ] || l=/dev/null  # a FIFO there would hold every run
  grep -E '"kind": ?"(eval|meta|event)"' -- "$l" 2>/dev/null | tail -n EVALS1
  s=$(wc -c < "$l" 2>/dev/null) || s=0
  printf '\n%s tail %s\n' "$MARK" "$s"; tail -c TAIL -- "$l" 2>/dev/null
  n=$((n+1))
done
printf '\n%s end\n' "$MARK"
""".replace("TAIL", str(TAIL))
    .replace("EVALS1", str(EVALS + 1))
    .replace("LEDGER", str(LEDGER))
    .replace("$MARK", MARK)
)


@dataclass(frozen=True, slots=True)
class FleetRow:
    host: str
    name: str
    run_dir: str
    state: str  # running | gone | ended | quiet | no folder | down | ...
    step: int | None = None
    steps: int | None = None
    step_s: float | None = None
    probe_step: int | None = None
    probe_value: float | None = None
    read: str = ""  # the verdict's label at the last probe, "PROVISIONAL ..." until the end
    gpu_hours: float | None = None
    warnings: tuple[str, ...] = ()
    checked_at: float = 0.0  # when this reading was taken (unix seconds)
    stale: bool = False  # a last-good reading: the host did not answer now
    note: str = ""
    reading: dict[str, Any] | None = None  # core/verdict/distances.py's; None when blinded

    def age(self, now: float) -> float:
        return max(0.0, now - self.checked_at)


def age_text(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f}s ago"
    if seconds < 5400:
        return f"{seconds / 60:.0f}m ago"
    return f"{seconds / 3600:.1f}h ago"


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else fmt.format(x)


CELLS = ("STEP", "S/STEP", "PROBE", "READ", "GPU-H", "WARN", "CHECKED")


def row_cells(r: FleetRow, now: float) -> tuple[str, ...]:
    """The columns `fontaine-tui runs` and the runs screen show for a row, as `CELLS` names them.

    They are step/total, s/step, the last probe (step:value), its read against the bounds,
    GPU-hours, the warnings' rules, and when it was checked (for a down host: its age)."""
    step = "?" if r.step is None else str(r.step)
    if r.steps:
        step += f"/{r.steps}"
    probe = "-" if r.probe_step is None else f"{r.probe_step}:{_num(r.probe_value, '{:.4f}')}"
    return (
        step,
        _num(r.step_s, "{:.3g}"),
        probe,
        r.read or "-",
        _num(r.gpu_hours, "{:.2f}"),
        ",".join(w.split(":", 1)[-1] for w in r.warnings) or "-",
        _checked(r, now),
    )


def _checked(r: FleetRow, now: float) -> str:
    """When the row was checked: now, or for a down host its last reading's age."""
    if not r.stale:
        return "now"
    return f"{age_text(r.age(now))} (down)" if r.checked_at else "never (down)"


@dataclass
class HostLook:
    host: str
    rows: list[FleetRow] = field(default_factory=list)
    error: str = ""


def script_argv(entries: Sequence[Entry]) -> list[str]:
    """The script's arguments: folder and pid of each run, in order.

    A Slurm job is given as job:ID, alive while squeue lists it."""
    out = []
    for e in entries:
        out += [e.run_dir, f"job:{e.job}" if e.job else str(e.pid)]
    return out


def parse_reply(data: bytes) -> list[dict[str, object]] | None:
    """Each run's parts from the script's output; None when it was cut short."""
    reply = _Reply()
    mark = MARK.encode() + b" "
    for line in data.split(b"\n"):
        if line.startswith(mark):
            reply.mark(line.decode("ascii", "replace").split())
        else:
            reply.buf.append(line)
    return reply.runs if reply.ended else None


# the marks that are not a part's name, each with the words its line must have (0: any);
# a mark line of another shape names a part
_MARKS = {"run": 5, "end": 0, "file": 3, "segments": 3}


class _Reply:
    """The script's output read so far: each run's parts, and the part being read."""

    def __init__(self) -> None:
        self.runs: list[dict[str, object]] = []
        self.part: str | None = None
        self.buf: list[bytes] = []
        self.ended = False

    def mark(self, words: list[str]) -> None:
        """A mark line: the part read so far ends, what the mark begins comes next."""
        if self.runs and self.part is not None:
            self.runs[-1][self.part] = b"\n".join(self.buf)
        self.buf = []
        self.part = self._begun(words)

    def _begun(self, words: list[str]) -> str | None:
        """The part the mark begins (None: none), its run's facts kept as they come."""
        kind, need = words[1], _MARKS.get(words[1])
        if need is None or need not in (0, len(words)) or (kind == "segments" and not self.runs):
            return self._named(words)
        if kind == "file":  # a run file's bytes, in base64
            return f"file:{words[2]}"
        if kind == "run":
            self.runs.append({"alive": words[3] == "1", "exists": words[4] == "1"})
        elif kind == "end":
            self.ended = True
        else:  # whether the log has rotated segments
            self.runs[-1]["rotated"] = words[2] == "1"
        return None

    def _named(self, words: list[str]) -> str:
        """A part its mark names (evals, tail, prereg, ...).

        The tail's mark says the log's size: a tail of all of it is whole."""
        if words[1] == "tail" and self.runs:
            size = words[2] if len(words) > 2 else ""
            self.runs[-1]["whole"] = size.isdigit() and int(size) <= TAIL
        return words[1]


def _file(parts: dict[str, object], name: str) -> bytes | None:
    """A run file's bytes as the script sent them (base64), None when it is not there."""
    raw = parts.get(f"file:{name}")
    if not isinstance(raw, bytes) or not raw.strip():
        return None
    try:
        return base64.b64decode(b"".join(raw.split()), validate=True)
    except ValueError:
        return None


def _context(
    entry: Entry, parts: dict[str, object], provenance: Mapping[str, object] | None, here: bool
) -> tuple[FolderEvidence, str]:
    """What the run folder holds beside its log, for its read as `verdict` reads it.

    Read in the folder itself on this host, else from the files the script sent (the ledger
    cut at LEDGER bytes reads as broken there, its amendments before the cut kept). The
    second item says what could not be read ("" when all could)."""
    where = f"{entry.host}:{entry.run_dir}"
    try:
        if here:
            ctx = FolderEvidence.of_folder(RunFolder(Path(entry.run_dir)), provenance, strict=False)
        else:
            ctx = FolderEvidence.of_files(
                _file(parts, "prereg.json"),
                provenance,
                _file(parts, "amendments.jsonl"),
                _file(parts, "amendments.jsonl.head"),
                _file(parts, "attempts.jsonl"),
                where,
            )
    except (InputError, OSError) as exc:  # a ledger not read holds a blinded read hidden
        said = f"the run's ledger not read: {exc}"
        return FolderEvidence(provenance=provenance, ledger_error=said), said[:120]
    return ctx, ctx.ledger_error[:120]


def read_run(
    entry: Entry,
    parts: dict[str, object],
    now: float,
    here: bool = False,
    until: float = 0.0,
    asked: bool = False,
) -> FleetRow:
    """One run's row from its parts (see FLEET_SCRIPT); `here`: the run is on this host.

    A run here that the parts cannot read whole is read whole from its folder while
    `time.monotonic()` is before `until` and its log is within WHOLE_BYTES. `asked`: the
    viewer's --blind (core/verdict/blind.py's `hidden`), as for a blind preset."""
    base: dict[str, Any] = dict(
        host=entry.host, name=entry.name, run_dir=entry.run_dir, checked_at=now
    )
    if not parts.get("exists"):
        return FleetRow(state="no folder", note="the run folder is gone", **base)
    evals = parts.get("evals", b"")
    cut = isinstance(evals, bytes) and evals.count(b"\n") > EVALS  # older lines left out
    store = RunStore()
    # one line past EVALS: the log holds more than was sent; the first piece of a tail is torn
    sent = [*_lines(evals, cut), *_lines(parts.get("tail", b""), not parts.get("whole"))]
    for n, raw in enumerate((raw for raw in sent if raw.strip()), start=1):
        store.add_line(raw, n)
    preset, launched, held = _frozen(entry, parts, here, base)
    partial, whole = _partial(entry, parts, cut, here, until)
    if partial:
        base["note"] = f"no read: {partial} (fontaine-tui verdict reads the whole log)"
    return _row(
        store,
        preset,
        launched,
        _state(entry, parts, store),
        base,
        now,
        held,
        read=not partial,
        whole=whole,
        asked=asked,
    )


def _lines(part: object, torn_first: bool) -> list[bytes]:
    """A part's lines, its first one left out where it is `torn_first`."""
    lines = part.split(b"\n") if isinstance(part, bytes) else []
    return lines[1:] if torn_first else lines


def _frozen(
    entry: Entry, parts: dict[str, object], here: bool, base: dict[str, Any]
) -> tuple[Preset | None, float | None, FolderEvidence]:
    """The run's frozen preset, launch time and folder evidence, from its prereg.json.

    A prereg.json that does not parse is this run's note, not the table's end."""
    from fontaine_tui.core.verdict.prereg import parse_prereg, parse_utc

    raw = parts.get("prereg")
    if not isinstance(raw, bytes) or not raw.strip():
        return None, None, FolderEvidence()
    try:
        pr = parse_prereg(raw.strip(), f"{entry.host}:{entry.run_dir}/prereg.json")
        preset, launched = pr.frozen_preset(), parse_utc(pr.launched_at)
    except Exception as exc:  # a bad prereg is this run's note, not the table's end
        base["note"] = str(exc)[:120]
        return None, None, FolderEvidence()
    held, note = _context(entry, parts, pr.provenance, here)
    if note:
        base["note"] = note
    return preset, launched, held


def _state(entry: Entry, parts: dict[str, object], store: RunStore) -> str:
    """running, ended or gone for a run launched (its pid or job), else ended or attached."""
    ended = bool(store.events) and store.events[-1].event == "end"
    if entry.pid > 0 or entry.job:
        return "running" if parts.get("alive") else ("ended" if ended else "gone")
    return "ended" if ended else "attached"


def _partial(
    entry: Entry, parts: dict[str, object], cut: bool, here: bool, until: float
) -> tuple[str, RunStore | None]:
    """What of the log the list does not read ("" : nothing), and the log read whole.

    A read from part of the log could differ from verdict's. A run here is read whole
    instead while the look has time (None: not read whole)."""
    partial = ""
    if parts.get("rotated"):
        partial = "rotated segments not read here"
    elif cut:
        partial = f"more than {EVALS} probe, meta and event lines"
    if not (partial and here and time.monotonic() < until):
        return partial, None
    whole, why = _whole_log(Path(entry.run_dir))
    return ("" if whole is not None else f"{partial}, nor read whole here: {why}"), whole


def _endpoint_in_force(preset: Preset, held: FolderEvidence | None) -> int | None:
    """The endpoint the ledger's applied extends moved, for a row with no read.

    That is a run with no probe yet, or a log the list cannot read; None with no ledger."""
    from fontaine_tui.core.verdict.amendments import check_amendments, endpoint_in_force

    if held is None or not held.amendments:
        return None
    every = [*preset.amendments, *held.amendments]
    return endpoint_in_force(preset, every, check_amendments(every, preset))


def _whole_log(root: Path) -> tuple[RunStore | None, str]:
    """The run's log with its rotated segments, read as `verdict` reads it; or why not.

    Counted first, cheaply: each file a regular one (a FIFO or a device would hold the list),
    at most WHOLE_BYTES of them decompressed and WHOLE_LINES lines in all (a line the reader
    cannot parse costs it tens of microseconds: the lines bound its time, not the bytes)."""
    import stat

    from fontaine_tui.core.limits import gunzip_chunks
    from fontaine_tui.core.log.read import load_log

    log = root / LOG
    size = lines = 0
    for path in [*sorted(root.glob(f"{LOG}.[0-9]*")), log]:
        try:
            if not stat.S_ISREG(path.stat().st_mode):
                return None, f"{path.name} is not a regular file"
            with path.open("rb") as fh:
                chunks = (
                    gunzip_chunks(fh, path, 1 << 20)
                    if path.name.endswith(".gz")
                    else iter(lambda: fh.read(1 << 20), b"")
                )
                for chunk in chunks:
                    size, lines = size + len(chunk), lines + chunk.count(b"\n")
                    if size > WHOLE_BYTES or lines > WHOLE_LINES:
                        return None, (
                            f"the log and its segments hold more than {WHOLE_LINES:,} lines or "
                            f"{WHOLE_BYTES >> 20} MiB"
                        )
        except (OSError, InputError) as exc:
            return None, f"{path.name}: {exc}"
    try:
        return load_log(log, columns=False, history=True), ""
    except (OSError, ValueError) as exc:
        return None, str(exc)


def foreign_row(entry: Entry, now: float, asked: bool = False) -> FleetRow | None:
    """The row of a run another trainer writes on this host, from its own files.

    Its files are read by core/run/attached.py. None for a run of ours. `asked`: the viewer's --blind, as `read_run` takes it."""
    from fontaine_tui.core.run.attached import read_attached

    if entry.job or not Path(entry.run_dir).is_dir():
        return None
    look = read_attached(entry.run_dir, entry.preset, entry.preset_sha256, now)
    if look is None:
        return None
    state = _launched_state(entry, look.state)
    base: dict[str, Any] = dict(
        host=entry.host,
        name=entry.name,
        run_dir=entry.run_dir,
        checked_at=now,
        note=look.detail[:120],
    )
    held = _held_here(entry, base)
    return _row(look.store, look.preset, None, state, base, now, held, asked=asked, look=look)


def _launched_state(entry: Entry, state: str) -> str:
    """A foreign run's state, where a launched [command] is alive while its process is."""
    if entry.pid <= 0:
        return state
    from fontaine_tui.core.run.launcher import pid_alive

    if pid_alive(entry.pid, entry.pid_started or None):
        return "running"
    return "gone" if state in ("running", "quiet") else state


def _held_here(entry: Entry, base: dict[str, Any]) -> FolderEvidence | None:
    """A foreign run's ledger, attempts and review trail, when a launch froze its folder.

    None when it did not; a ledger not read is the row's note."""
    folder = RunFolder(Path(entry.run_dir))
    if not folder.prereg.exists():
        return None
    from fontaine_tui.core.verdict.prereg import read_prereg

    try:
        provenance = read_prereg(folder).provenance
    except (InputError, OSError) as exc:
        base["note"] = f"the run's ledger not read: {exc}"[:120]
        return None
    held, note = _context(entry, {}, provenance, here=True)
    base["note"] = note or base["note"]
    return held


def _row(
    store: RunStore,
    preset: Preset | None,
    launched: float | None,
    state: str,
    base: dict[str, Any],
    now: float,
    held: FolderEvidence | None = None,
    read: bool = True,
    whole: RunStore | None = None,
    asked: bool = False,
    look: AttachedRead | None = None,
) -> FleetRow:
    """A row from a run's store and its preset (None: no read, no warnings).

    Its read is in what the run folder holds beside its log (`held`: core/run/evidence.py),
    as `verdict` reads it; from `whole` (the log read whole, without its train columns) where
    given, the rest of the row from `store`. The blind (the preset's, or the viewer's --blind:
    `asked`) hides it as it hides it on every other surface (core/verdict/blind.py), and the
    trainer's words at its end in the note (`look`'s, core/verdict/blindwords.py)."""
    row: dict[str, Any] = dict(state=state, **_pace_cells(store))
    if held is not None and held.ledger_error:
        read = False  # `verdict` refuses a broken ledger: no read here either
        base["note"] = f"no read: {held.ledger_error}"[:120]
    judged = whole or store
    last = judged.last_probe_step()
    v = None
    if read and preset is not None and last is not None:
        v = verdict_of(judged, preset, held or FolderEvidence())
    hidden = _hidden(preset, v, asked)
    _trainer_note(base, look, preset, hidden)
    row.update(_probe_cells(judged, preset, last, hidden))
    if preset is not None:
        row.update(_read_cells(preset, v, held, hidden))
        row.update(_cost_cells(store, preset, state, launched, now, hidden))
    return FleetRow(**row, **base)


def _pace_cells(store: RunStore) -> dict[str, Any]:
    """The last step, and the median s/step of the last ten steps timed."""
    rates = [x for x in store.columns["step_s"][-10:] if math.isfinite(x) and x > 0]
    return dict(
        step=store.last_step or None,
        step_s=statistics.median(rates) if rates else None,
    )


def _hidden(preset: Preset | None, v: Verdict | None, asked: bool) -> bool:
    """Whether the row's values are hidden by the blind.

    Without a read, a blind preset's (or viewer's) values stay hidden: nothing says it is
    final."""
    from fontaine_tui.core.verdict import blind

    if preset is None:
        return False
    return blind.hidden(preset, v, asked) if v else preset.verdict.blind or asked


def _trainer_note(
    base: dict[str, Any], look: AttachedRead | None, preset: Preset | None, hidden: bool
) -> None:
    """The trainer's words at its end, as the note, shown as the blind allows."""
    if look is None or preset is None or base.get("note") != look.detail[:120]:
        return
    base["note"] = look.shown(rule_metrics(preset.verdict, preset.labels), hidden)[:120]


def _hours_to(store: RunStore, running: bool, now: float) -> float:
    """Where a run's GPU-hours end: now while it runs, else at its last line's time."""
    if running:
        return now
    times = [t for t in store.columns["time"] if math.isfinite(t)]
    return times[-1] if times else now


def _probe_cells(
    judged: RunStore, preset: Preset | None, last: int | None, hidden: bool
) -> dict[str, Any]:
    """The last probe's step, and its value of the preset's metric (None: not a number)."""
    if last is None:
        return {}
    cells: dict[str, Any] = dict(probe_step=last)
    probe = seen_probes(judged, hidden).get(last)
    if preset is not None and probe is not None:
        value = probe.value(preset.verdict.metric)
        cells.update(probe_value=value if math.isfinite(value) else None)
    return cells


def _read_cells(
    preset: Preset, v: Verdict | None, held: FolderEvidence | None, hidden: bool
) -> dict[str, Any]:
    """The planned steps (the endpoint in force) and the read.

    A read the blind hides is BLINDED here too (core/verdict/blind.py)."""
    from fontaine_tui.core.verdict import blind, distances

    in_force = v.endpoint_step if v is not None else _endpoint_in_force(preset, held)
    cells: dict[str, Any] = dict(steps=planned_steps(preset, in_force))
    if v is not None:
        label = blind.BLINDED if hidden else v.label
        cells.update(read=("PROVISIONAL " if v.provisional else "") + label)
        cells.update(reading=None if hidden else distances.reading(v))
    return cells


def _cost_cells(
    store: RunStore,
    preset: Preset,
    state: str,
    launched: float | None,
    now: float,
    hidden: bool,
) -> dict[str, Any]:
    """The GPU-hours used, and a running run's warnings.

    The hours run to now, or to the last line of a run that ended."""
    from fontaine_tui.core.watch import alert_book, alerts

    ended = state in ("ended", "failed") or alerts.logged_over(store)
    ctx = alert_book.context_for(store, preset, None, launched)
    if hidden:  # the envelope rule quotes the read
        ctx = dataclasses.replace(ctx, envelopes=())
    running = state in ("running", "attached", "quiet") and not ended
    cells: dict[str, Any] = dict(
        gpu_hours=alerts.gpu_hours_used(store, _hours_to(store, running, now), None, ctx)
    )
    if running:
        found = alerts.run_rules(store, None, preset.gates, now, None, ctx)
        cells.update(
            warnings=tuple(f"{w.severity}:{w.rule}" for w in found if w.rule != "first-poll")
        )
    return cells


def ssh_argv(
    host: str,
    command: str,
    control_dir: Path | None,
    ssh_options: Sequence[str] = (),
    connect_timeout: int = 1,
) -> list[str]:
    """ssh running `command` on `host` over the fleet's shared connection there.

    Its socket is in `control_dir`; None: the fleet's folder is looked for again, and
    InputError says, in one line, why there is none (core/ssh/control.py)."""
    check_destination(host, "registry host")
    if control_dir is None:
        control_dir = shared_control_folder(FLEET_FOLDER)
    return [
        "ssh",
        *ssh_options,
        "-o",
        "BatchMode=yes",
        "-o",
        f"ConnectTimeout={connect_timeout}",
        "-o",
        "ControlMaster=auto",
        "-o",
        f"ControlPath={control_dir}/%C",
        "-o",
        "ControlPersist=300",
        "--",
        host,
        command,
    ]


def look_host(
    host: str,
    entries: Sequence[Entry],
    here: bool,
    deadline_s: float,
    control_dir: Path | None,
    ssh_options: Sequence[str] = (),
    clock: Callable[[], float] = time.time,
    env: Mapping[str, str] | None = None,
    asked: bool = False,
) -> HostLook:
    """Run one command on `host` (or here) for all its runs.

    It runs with the host's `[hosts.NAME] env` (a SLURM_CONF there, for squeue). An error comes
    instead of rows when the host does not answer in time. `asked`: the viewer's --blind."""
    command = _host_command(entries, env)
    try:
        argv = ["sh", "-c", command] if here else ssh_argv(host, command, control_dir, ssh_options)
    except InputError as exc:  # never reaches ssh
        return HostLook(host, error=str(exc))
    until = time.monotonic() + deadline_s  # whole reads here too, while the look has time
    try:
        res = _run(argv, deadline_s, group=here)
    except subprocess.TimeoutExpired:
        return HostLook(host, error=f"no answer within {deadline_s:g} s")
    except OSError as exc:
        return HostLook(host, error=str(exc))
    runs = parse_reply(res.stdout)
    if runs is None or len(runs) != len(entries):
        return HostLook(host, error=_cut_short(res))
    now = clock()
    return HostLook(
        host,
        [
            (here and foreign_row(e, now, asked)) or read_run(e, p, now, here, until, asked)
            for e, p in zip(entries, runs, strict=True)
        ],
    )


def _host_command(entries: Sequence[Entry], env: Mapping[str, str] | None) -> str:
    """The fleet script's command line for a host's runs, under the host's `env`."""
    prefix = ["env", "--", *(shlex.quote(f"{k}={v}") for k, v in env.items())] if env else []
    return " ".join(
        [
            *prefix,
            "sh",
            "-c",
            shlex.quote(FLEET_SCRIPT),
            "fleet",
            *map(shlex.quote, script_argv(entries)),
        ]
    )


def _cut_short(res: subprocess.CompletedProcess[bytes]) -> str:
    """Why a host's reply holds no rows: ssh's exit and the last line it said."""
    last = res.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
    return f"ssh exit {res.returncode}: {last[0][:120]}"


def _run(argv: list[str], timeout: float, group: bool) -> subprocess.CompletedProcess[bytes]:
    """The script's run within `timeout`.

    Here (`group`) it runs in a process group of its own, all of it ended past the timeout: a
    `grep` held by an odd file is not left behind. Over SSH the ssh client alone is ended: its
    connection master is not ours to end."""
    if not group:
        return subprocess.run(
            argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, env=child_env()
        )
    with subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=child_env(),
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the group this started, nothing else
            proc.communicate()
            raise
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def host_envs(config: Path | None = None) -> dict[str, Mapping[str, str]]:
    """Each configured host's `env` (config.toml's [hosts.NAME]).

    None when the file cannot be read (the table is still shown: a broken config is
    `launch --on`'s to report)."""
    from fontaine_tui.core.errors import InputError
    from fontaine_tui.core.notify.destinations import config_path
    from fontaine_tui.core.runs.hosts import parse_hosts

    path = config or config_path()
    try:
        hosts = parse_hosts(tomlfile.loads(read_text(path)), path)
    except (OSError, UnicodeDecodeError, ValueError, InputError):
        return {}
    return {name: h.env for name, h in hosts.items() if h.env}


FLEET_FOLDER = f"fontaine-fleet-{os.getuid()}"


def control_dir() -> Path | None:
    """Where the fleet's shared SSH connections live between two polls.

    A short folder of this user's, private, kept from one poll to the next
    (core/ssh/control.py); None when none can be made here: each host looked at over SSH
    then says why, and this host's runs are looked at all the same."""
    try:
        return shared_control_folder(FLEET_FOLDER)
    except InputError:
        return None


def blinded_reading(r: FleetRow) -> FleetRow:
    """A last reading as a blind viewer sees it: no probe value, read or envelope warning.

    The cache keeps what the look that wrote it showed, blinded or not, and not whether the
    read was final: a reading whose read it held shows BLINDED in its place."""
    from fontaine_tui.core.verdict import blind

    if not r.read and r.probe_value is None and r.reading is None:
        return r
    read = r.read
    if read and not read.endswith(blind.BLINDED):
        read = ("PROVISIONAL " if read.startswith("PROVISIONAL ") else "") + blind.BLINDED
    return dataclasses.replace(
        r,
        probe_value=None,
        read=read,
        reading=None,
        warnings=tuple(w for w in r.warnings if not w.endswith(":left-envelope")),
    )


def _last_reading(good: dict[str, dict[str, Any]], host: str, e: Entry, asked: bool) -> FleetRow:
    """A down host's run, from its last good reading (stale), or "no reading yet"."""
    old = good.get(f"{host}\0{e.run_dir}")
    row = (
        FleetRow(**{**old, "stale": True, "warnings": tuple(old["warnings"])})
        if old
        else FleetRow(host, e.name, e.run_dir, "down", note="no reading yet", stale=True)
    )
    return blinded_reading(row) if asked else row


class Fleet:
    """Looks at every registered run; the last good reading per run kept in `cache`."""

    def __init__(
        self,
        cache: Path,
        control_dir: Path | None,
        this_host: str,
        ssh_options: Sequence[str] = (),
        deadline_s: float = DEADLINE_S,
        clock: Callable[[], float] = time.time,
        envs: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.cache, self.control_dir, self.this_host = cache, control_dir, this_host
        self.ssh_options, self.deadline_s, self.clock = tuple(ssh_options), deadline_s, clock
        self.envs = dict(envs or {})  # host -> its [hosts.NAME] env

    def check(
        self, entries: Sequence[Entry], asked: bool = False
    ) -> tuple[list[FleetRow], dict[str, str]]:
        """(rows in the registry's order, {host: why it is shown from its last reading}).

        `asked`: the viewer's --blind (a console's `attach --blind`), which hides every run's
        read as a blind preset does (`_row`); a down host's last reading, which says nothing
        of whether its read was final, then shows none (`blinded_reading`)."""
        by_host: dict[str, list[Entry]] = {}
        for e in entries:
            by_host.setdefault(e.host, []).append(e)
        looks = self._look_all(by_host, asked)
        good = self._read_cache()
        rows: dict[tuple[str, str], FleetRow] = {}
        down: dict[str, str] = {}
        for host, look in looks.items():
            if look.error:
                down[host] = look.error
                for e in by_host[host]:
                    rows[(host, e.run_dir)] = _last_reading(good, host, e, asked)
            else:
                for r in look.rows:
                    rows[(host, r.run_dir)] = r
                    good[f"{host}\0{r.run_dir}"] = asdict(r)
        self._write_cache(good)
        return [rows[(e.host, e.run_dir)] for e in entries], down

    def _look_all(self, by_host: dict[str, list[Entry]], asked: bool) -> dict[str, HostLook]:
        """Each host's look, the hosts side by side (16 at most at once)."""
        with ThreadPoolExecutor(max_workers=max(1, min(16, len(by_host)))) as pool:
            futures = {
                h: pool.submit(
                    look_host,
                    h,
                    es,
                    h == self.this_host,
                    self.deadline_s,
                    self.control_dir,
                    self.ssh_options,
                    self.clock,
                    None if h == self.this_host else self.envs.get(h),
                    asked,
                )
                for h, es in by_host.items()
            }
            return {h: f.result() for h, f in futures.items()}

    def _read_cache(self) -> dict[str, dict[str, Any]]:
        try:
            doc = json_loads(read_text(self.cache))
        except (OSError, ValueError):
            return {}
        return doc.get("rows", {}) if isinstance(doc, dict) else {}

    def _write_cache(self, rows: dict[str, dict[str, Any]]) -> None:
        try:
            atomic_write(
                self.cache,
                json.dumps({"schema": "fontaine-tui/fleet/1", "rows": rows}, default=str),
            )
        except OSError:
            pass  # a cache: the next poll tries again
