"""Verdict and replay time on a run whose amendments.jsonl holds many declarations.

The commands are `fontaine-tui verdict` and `replay --plain`, on a run whose amendments.jsonl
holds many declarations (20,000 by default): a ledger a script wrote in a loop.

    python bench/amendments.py [--count 20000] [--probes 100] [--kind mixed] [--repeat 3]

The run is demosonly_1gpu (without its preset amendments) frozen, a log with a probe every
250 steps (`probes` of them), and `count` amendments chained from its prereg.json: fixed
scales (one applies, the rest are refused), scales from a comparator, extends (each
applied, moving the endpoint in turn), or scales and extends in turn. Prints the best of
`repeat` wall times of each whole command in one process. A replay reads the verdict at
every probe, so a cost per amendment in each read makes it probes x amendments; the target
is linear: a replay within a few times the verdict's own time.
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


def make_run(root: Path, count: int, kind: str = "scale", probes: int = 4) -> RunFolder:
    text = (ROOT / "presets" / "demosonly_1gpu.toml").read_text()
    preset_path = root / "noamend.toml"
    preset_path.write_text(text[: text.index("[[amendments]]")] + text[text.index("[gates]") :])
    folder = RunFolder(root / "run")
    folder.root.mkdir()
    freeze(folder, load_preset(preset_path), ["engine"], "h", now=1_800_000_000)
    write_log(
        folder.log,
        probes={250 * i: (3.4623 + i / 100, 3.6862) for i in range(1, probes + 1)},
        steps=250 * probes,
    )
    prev, lines, endpoint = genesis_of(folder), [], 1000
    for i in range(1, count + 1):
        seen = _seen(i, kind, endpoint)
        if kind == "late" and seen < endpoint:
            endpoint = 1000 + 250 * i
        record = {
            "id": i,
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
    return folder


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
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = make_run(Path(tmp), args.count, args.kind, args.probes)
        for argv in (["verdict", str(folder.root)], ["replay", str(folder.root), "--plain"]):
            runs = [timed(argv) for _ in range(args.repeat)]
            best = min(t for t, _ in runs)
            print(
                f"{' '.join(argv[:1] + argv[2:]):<15} {args.count} {args.kind} amendments, "
                f"{args.probes} probes: best {best:.3f} s of {args.repeat} (exit {runs[0][1]})"
            )


if __name__ == "__main__":
    main_bench()
