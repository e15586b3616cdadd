"""The files a verdict reads are the files it names (model/judge.py's Judged.reads).

`seal` carries exactly `reads` into a bundle, so a file the verdict opened but did not name
would be missing where `verify` recomputes it. The run here holds every record a verdict can
read (an amendment declared with `amend`, a review line, attempts.jsonl written for a real
process, a banked comparator); a Python audit hook sees every file the verdict opens.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

from fontaine_tui.cli import main
from fontaine_tui.core.bank import store
from fontaine_tui.core.run import attempts
from fontaine_tui.core.run.launcher import EngineProcess
from fontaine_tui.core.runfolder import VERDICT, RunFolder
from fontaine_tui.core.verdict import review
from fontaine_tui.model.judge import judge

DEMO = Path(__file__).parents[2] / "fontaine_tui" / "demo"
OPENED: list[str] = []
WATCHING: list[bool] = []


def _audit(event: str, args: tuple) -> None:
    if WATCHING and event == "open" and isinstance(args[0], (str, os.PathLike)):
        OPENED.append(os.path.abspath(os.fspath(args[0])))


sys.addaudithook(_audit)  # once for the session; it records only while WATCHING


def test_every_file_a_verdict_opens_is_one_it_names(tmp_path: Path, bank_path: Path) -> None:
    root = tmp_path / "run"
    shutil.copytree(DEMO / "run", root)
    doc = json.loads((DEMO / "bank" / "demo_2rank_cpu.json").read_bytes())
    store.put_whole("demo_2rank_cpu", doc)  # the bank the demo's preset pins its comparator in
    assert main(["amend", str(root), "--extend-to", "350", "--text", "a slow warm-up"]) == 1
    review.append(root / "review.jsonl", "accept", judge(str(root)).verdict, "looked at it")
    folder = RunFolder(root)
    engine = EngineProcess.start([sys.executable, "-c", "pass"], folder)
    number = attempts.begin(folder, "launch", engine)
    deadline = time.monotonic() + 30
    while (info := engine.poll()) is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    attempts.end(folder, number, info)
    main(["verdict", str(root), "--json"])  # verdict.json, which the review check reads

    OPENED.clear()
    WATCHING.append(True)
    try:
        judged = judge(str(root))
    finally:
        WATCHING.clear()
    named = {os.path.abspath(p) for p in judged.reads()}
    named |= {str(bank_path / e.name / f"{e.sha256}.json") for e in judged.banked()}
    ours = [p for p in OPENED if p.startswith((str(root) + os.sep, str(bank_path) + os.sep))]
    # verdict.json is sealed anew; the bank's CURRENT only says which version a bare name means
    unnamed = {p for p in ours if p not in named and Path(p).name != "CURRENT"}
    unnamed -= {str(root / VERDICT)}
    assert not unnamed, unnamed
    names = {Path(p).name for p in named}
    assert {"prereg.json", "amendments.jsonl", "review.jsonl", "attempts.jsonl"} <= names
    assert {"train_log.jsonl", f"{judged.banked()[0].sha256}.json"} <= names
