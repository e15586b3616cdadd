"""The console's model: one run's store, ledger and verdicts, and the one place that calls
core (follow, verdict, ledger, prereg, warnings, registry). Screens render `RunView`s."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.log.store import RunStore, ingest_lines
from fontaine_tui.core.runfolder import AMENDMENTS, PREREG, RunFolder
from fontaine_tui.core.text import literal
from fontaine_tui.core.verdict.presets import Amendment, Preset
from fontaine_tui.core.verdict.rules import Verdict, compute_verdict, verdict_series
from fontaine_tui.model import readout

TAIL_LINES = 400


@dataclass(frozen=True, slots=True)
class Ledger:
    launched_at: str
    preset_sha256: str
    hash_status: str  # "matches prereg.json", "bounds changed after launch: ...", or why unknown
    hash_ok: bool | None
    amendments: tuple[Amendment, ...]
    error: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class RunView:
    """Everything a screen shows at one moment; rebuilt at most a few times a second."""

    version: int
    name: str
    label: str
    preset: Preset
    status: str
    store: RunStore
    progress: readout.Progress
    verdicts: tuple[Verdict, ...]
    latest: Verdict
    rows: tuple[readout.ProbeRow, ...]
    ledger: Ledger
    warnings: tuple[object, ...]
    note: str

    def verdict_at(self, step: int | None) -> Verdict:
        """The read at a probe step; the latest read when `step` is None or not a probe."""
        if step is not None:
            for v in self.verdicts:
                if v.read_step == step:
                    return v
        return self.latest


def folder_of(source: object) -> Path | None:
    """Where review.jsonl and verdict.json go: the run folder, or the replayed log's folder."""
    folder = getattr(source, "folder", None)
    if folder is not None:
        return Path(folder)
    log = getattr(source, "log", None) or getattr(source, "path", None)
    return Path(log).parent if log is not None else None


class Session:
    def __init__(self, source: object, preset: Preset, kind: str, process: object = None,
                 folder: Path | None = None) -> None:
        self.source = source
        self.preset = preset  # what the verdict computes with: the frozen one once read
        self.given_preset = preset  # what the command line or registry named
        self.kind = kind  # "launch" | "attach" | "replay"
        self.process = process
        self.folder = folder if folder is not None else folder_of(source)
        self.store = RunStore()
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.tail_total = 0
        self.note = ""
        self.exit_code: int | str | None = None
        self.ledger = Ledger("", preset.sha256, "no prereg.json read yet", None, ())
        self.warnings: tuple[object, ...] = ()
        self.warning_book: object = None
        self.gpu_hours: float | None = None
        self.version = 0
        self._verdict_key: object = None
        self._verdicts: tuple[Verdict, ...] = ()
        self._latest: Verdict | None = None

    # -- input ---------------------------------------------------------------------------

    def apply(self, batch: object) -> bool:
        """Apply one follower batch; True if the store changed."""
        if getattr(batch, "segment", False):  # a rotation: keep everything, count lines on
            self.store.begin_segment(getattr(batch, "name", ""), getattr(batch, "note", ""))
        note = getattr(batch, "note", "")
        if note:
            self.note = note
        lines = batch.lines  # type: ignore[attr-defined]
        if lines:
            ingest_lines(self.store, lines, batch.first_line)  # type: ignore[attr-defined]
        self.version += 1
        return bool(lines) or bool(note) or getattr(batch, "segment", False)

    def apply_tail(self, batch: object) -> int:
        """Engine output lines, decoded and made literal; returns how many were added."""
        if getattr(batch, "segment", False) and self.tail:
            self.tail.append(literal(f"-- {getattr(batch, 'note', '') or 'new file'}"))
        lines = batch.lines  # type: ignore[attr-defined]
        for raw in lines:
            self.tail.append(literal(raw.decode("utf-8", "replace").rstrip("\r")))
        self.tail_total += len(lines)
        return len(lines)

    def poll_process(self) -> bool:
        """True when the launched engine has just exited."""
        if self.process is None or self.exit_code is not None:
            return False
        info = self.process.poll()  # type: ignore[attr-defined]
        if info is None:
            return False
        code = getattr(info, "code", None)
        sig = getattr(info, "signal", None)
        self.exit_code = code if isinstance(code, int) else (sig or "?")
        self.version += 1
        return True

    @property
    def process_alive(self) -> bool:
        return self.process is not None and self.exit_code is None and self.process.poll() is None  # type: ignore[attr-defined]

    def update_warnings(self, telemetry: object, now: float) -> None:
        """Re-evaluate the warning rules (core.warnings) and the GPU-hours they gate on."""
        from fontaine_tui.model import alerts as warnings_adapter

        self.warnings = warnings_adapter.evaluate(self, telemetry, now)
        self.gpu_hours = warnings_adapter.gpu_hours(self, telemetry, now)

    # -- ledger --------------------------------------------------------------------------

    async def read_ledger(self) -> None:
        """prereg.json (hash check) and amendments.jsonl, read through the source (so a run
        over SSH has its ledger too) into a scratch folder that the core readers take."""
        import tempfile

        read = getattr(self.source, "read_bytes", None)
        if self.folder is None and read is None:
            self.ledger = Ledger("", self.preset.sha256, "no run folder (log only)", None, ())
            return
        files = {}
        for name in (PREREG, AMENDMENTS):
            if self.folder is not None:
                path = self.folder / name
                files[name] = path.read_bytes() if path.is_file() else None
            else:
                files[name] = await read(name)  # type: ignore[misc]
        with tempfile.TemporaryDirectory(prefix="fontaine-ledger-") as tmp:
            for name, data in files.items():
                if data is not None:
                    (Path(tmp) / name).write_bytes(data)
            self.ledger = self._ledger_from(RunFolder(Path(tmp)))
        self._verdict_key = None
        self.version += 1

    def _ledger_from(self, rf: RunFolder) -> Ledger:
        from fontaine_tui.core.verdict.ledger import read_amendments
        from fontaine_tui.core.verdict.prereg import compare, read_prereg

        amendments: tuple[Amendment, ...] = ()
        error = ""
        try:
            amendments = tuple(read_amendments(rf))
        except InputError as exc:
            error = str(exc)
        launched, status, ok = "", "no prereg.json beside the log", None
        if rf.prereg.exists():
            try:
                pr = read_prereg(rf)
                launched = pr.launched_at
                change = compare(pr, self.given_preset)
                # the frozen pre-registration is the authority: compute with its bounds
                self.preset = pr.frozen_preset()
                if change is None:
                    status, ok = "matches prereg.json", True
                elif change.math_changed:
                    status, ok = (f"the preset given differs from the frozen prereg.json "
                                  f"({change.detail}): computing with the frozen bounds"), False
                else:
                    status, ok = (f"matches prereg.json (the preset given differs only in "
                                  f"[platform]: {change.detail})"), True
            except InputError as exc:
                status, ok = str(exc).replace(str(rf.root), "run folder"), False
        return Ledger(launched, self.preset.sha256, status, ok, amendments, error)

    # -- output --------------------------------------------------------------------------

    def _read_verdicts(self) -> tuple[tuple[Verdict, ...], Verdict]:
        st = self.store
        key = (id(st), st.probes_version, self.ledger.amendments)
        if key != self._verdict_key or self._latest is None:
            am = self.ledger.amendments
            self._verdicts = tuple(verdict_series(st, self.preset, am))
            self._latest = compute_verdict(st, self.preset, None, am)
            self._verdict_key = key
        return self._verdicts, self._latest

    def ended(self) -> bool:
        ev = self.store.events
        return bool(ev) and ev[-1].event == "end"

    def view(self) -> RunView:
        verdicts, latest = self._read_verdicts()
        st = self.store
        status = readout.run_status(self.kind, self.exit_code, bool(st.steps), self.ended())
        meta = st.metas[-1].run if st.metas else ""
        return RunView(self.version, self.preset.run_name or meta,
                       str(getattr(self.source, "label", "")), self.preset, status, st,
                       replace(readout.progress(st, self.preset), gpu_hours=self.gpu_hours),
                       verdicts, latest,
                       tuple(readout.probe_rows(st, verdicts)), self.ledger, self.warnings,
                       self.note)

