"""Verdict and replay time on a run whose amendments.jsonl holds many declarations.

The commands are `fontaine-tui verdict` and `replay --plain`, on a run whose amendments.jsonl
holds many declarations (20,000 by default): a ledger a script wrote in a loop.

    python bench/amendments.py [--count 20000] [--probes 100] [--kind mixed] [--repeat 3]
    python bench/amendments.py --in-preset [--count 20000] [--probes 100] [--repeat 3]

The run is demosonly_1gpu (without its preset amendments) frozen, a log with a probe every
250 steps (`probes` of them), and `count` amendments chained from its prereg.json: fixed
scales (one applies, the rest are refused), scales from a comparator, extends (each
applied, moving the endpoint in turn), or scales and extends in turn. Prints the best of
`repeat` wall times of each whole command in one process. A replay reads the verdict at
every probe, so a cost per amendment in each read makes it probes x amendments; the target
is linear: a replay within a few times the verdict's own time.

With `--in-preset` the declarations are the preset's own `[[amendments]]` instead (a preset a
script wrote: `count` extends, each applied in turn): `verdict LOG --preset P` loads and checks
the TOML, and `verdict` / `replay --plain` of the run frozen from it read its prereg.json. Each
runs side by side on `count` extends and on a tenth as many; the target is linear: about ten
times the time, not a hundred (each one checked against all those before it), and a replay
that checks them once, not once per probe.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fontaine_tui.cli import main  # noqa: E402
from fontaine_tui.core.preset.find import load_preset  # noqa: E402
from fontaine_tui.core.runfolder import RunFolder  # noqa: E402
from fontaine_tui.core.verdict.ledger import _canonical, _sha, genesis_of  # noqa: E402
from fontaine_tui.core.verdict.prereg import freeze, utc_iso  # noqa: E402
from tests.logs import T0, write_log  # noqa: E402


def _rule(i: int, kind: str) -> dict[str, object]:
    if kind in ("extend", "late") or (kind == "mixed" and i % 2):
        return {"kind": "extend", "to_step": 1000 + 250 * i}  # each applied, in turn
    if kind == "comparator":
        return {"kind": "scale", "from_step": 250, "comparator": "demosonly"}
    return {"kind": "scale", "factor": 1.0 + (i % 7) / 100}


def _seen(i: int, kind: str, endpoint: int) -> int:
    """The last step seen at declaration `i`: 100, unless `kind` is "late".

    With "late", each extend is declared just before the endpoint in force (after the
    preset's own), and every fifth one after it.
    """
    if kind != "late":
        return 100
    return endpoint - 50 if i % 5 else endpoint + 50


def _without_amendments() -> str:
    text = (ROOT / "presets" / "demosonly_1gpu.toml").read_text()
    return text[: text.index("[[amendments]]")] + text[text.index("[gates]") :]


def in_preset(root: Path, count: int) -> Path:
    """demosonly_1gpu with `count` extends of its own (each applied in turn): its path."""
    text = _without_amendments()
    cut = text.index("[gates]")
    extends = "".join(
        f'[[amendments]]\nid = {i}\nkind = "extend"\nto_step = {1000 + 250 * i}\n'
        f'declared_after_step = 100\ndeclared_before_step = 250\ntext = "extend {i}"\n\n'
        for i in range(1, count + 1)
    )
    root.mkdir(parents=True, exist_ok=True)
    path = root / "many.toml"
    path.write_text(text[:cut] + extends + text[cut:])
    return path


def preset_run(root: Path, count: int, probes: int = 4) -> tuple[Path, RunFolder]:
    """The in_preset preset's path, and a run folder frozen from it with `probes` probes."""
    path = in_preset(root, count)
    folder = RunFolder(root / "run")
    folder.root.mkdir()
    freeze(folder, load_preset(path), ["engine"], "h", now=1_800_000_000)
    write_log(folder.log, probes=_probes(probes), steps=250 * probes)
    return path, folder


def make_run(root: Path, count: int, kind: str = "scale", probes: int = 4) -> RunFolder:
    preset_path = root / "noamend.toml"
    preset_path.write_text(_without_amendments())
    folder = RunFolder(root / "run")
    folder.root.mkdir()
    freeze(folder, load_preset(preset_path), ["engine"], "h", now=1_800_000_000)
    write_log(folder.log, probes=_probes(probes), steps=250 * probes)
    write_ledger(folder, count, kind)
    return folder


def write_ledger(folder: RunFolder, count: int, kind: str, first_id: int = 1) -> None:
    """amendments.jsonl of `count` declarations of `kind`, chained from prereg.json."""
    prev, lines, endpoint = genesis_of(folder), [], 1000
    for i in range(1, count + 1):
        seen = _seen(i, kind, endpoint)
        if kind == "late" and seen < endpoint:
            endpoint = 1000 + 250 * i
        record = {
            "id": first_id + i - 1,
            # when the log (a step every 0.5 s from T0) was at the step seen: the log's own
            # clock agrees with the step the declaration says it saw
            "declared_at": utc_iso(T0 + seen * 0.5 + 0.3),
            "last_step_seen": seen,
            "prev": prev,
            "rule": _rule(i, kind),
        }
        record["hash"] = _sha(_canonical(record))
        line = _canonical(record)
        lines.append(line)
        prev = _sha(line)
    folder.amendments.write_bytes(b"\n".join(lines) + b"\n")


def _probes(count: int) -> dict[int, tuple[float, float]]:
    """A probe every 250 steps, `count` of them."""
    return {250 * i: (3.4623 + i / 100, 3.6862) for i in range(1, count + 1)}


def timed(argv: list[str]) -> tuple[float, int]:
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return time.perf_counter() - start, code


def main_bench() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--probes", type=int, default=100)
    ap.add_argument(
        "--kind",
        choices=("scale", "comparator", "extend", "late", "mixed"),
        default="mixed",
        help="the amendments: fixed-factor scales, extends (each applied), or both in turn",
    )
    ap.add_argument(
        "--in-preset",
        action="store_true",
        help="the preset's own [[amendments]] (extends), not the ledger's",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.in_preset:
            _in_preset(Path(tmp), args.count, args.probes, args.repeat)
            return
        folder = make_run(Path(tmp), args.count, args.kind, args.probes)
        for argv in (["verdict", str(folder.root)], ["replay", str(folder.root), "--plain"]):
            runs = [timed(argv) for _ in range(args.repeat)]
            best = min(t for t, _ in runs)
            print(
                f"{' '.join(argv[:1] + argv[2:]):<15} {args.count} {args.kind} amendments, "
                f"{args.probes} probes: best {best:.3f} s of {args.repeat} (exit {runs[0][1]})"
            )


def _in_preset(root: Path, count: int, probes: int, repeat: int) -> None:
    """Each command on a preset of `count` extends and one of a tenth as many, side by side."""
    commands: dict[int, list[list[str]]] = {}
    for n in (count // 10, count):
        path, folder = preset_run(root / str(n), n, probes)
        bare = root / str(n) / "bare" / "train_log.jsonl"
        write_log(bare, probes=_probes(probes), steps=250 * probes)
        commands[n] = [
            ["verdict", str(bare), "--preset", str(path)],
            ["verdict", str(folder.root)],
            ["replay", str(folder.root), "--plain"],
        ]
    labels = ("verdict LOG --preset P", "verdict RUN", "replay RUN --plain")
    for i, label in enumerate(labels):
        best = {}
        for n, argvs in commands.items():
            runs = [timed(argvs[i]) for _ in range(repeat)]
            best[n] = min(t for t, _ in runs)
        small, big = best[count // 10], best[count]
        print(
            f"{label:<22} {count // 10} / {count} preset extends, {probes} probes: "
            f"best {small:.3f} s / {big:.3f} s of {repeat} ({big / small:.1f}x)"
        )


if __name__ == "__main__":
    main_bench()
