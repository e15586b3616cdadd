"""Text the program did not write is shown, never obeyed: every user-supplied string — a
preset's interpretation, question and comparator text, registry fields, log fields, the
engine's output, file names, error messages — goes through each screen and each plain output,
and no ESC, BEL, C1 control or bidirectional override reaches the output."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fontaine_tui.cli import main
from fontaine_tui.core.follow.local import LocalRun
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.text import unsafe
from fontaine_tui.core.verdict.prereg import freeze
from tests.console.conftest import SIZE, console, loaded, until
from tests.logs import RIGONLY_LIKE, dumps, records

ROOT = Path(__file__).resolve().parents[2]
# OSC 52 (clipboard write), a CSI colour, a C1 CSI, a bidi override and an isolate
EVIL = "A\x1b]52;c;UFdO\x07B\x1b[31mC\x9b1mD\u202eE\u2066F"
EVIL_TOML = EVIL.encode("unicode_escape").decode().replace("\\x", "\\u00")


def _evil_preset(tmp_path: Path) -> Path:
    text = (ROOT / "presets" / "demosonly_1gpu.toml").read_text()
    text = re.sub(r'(?m)^description = "', lambda m: m.group(0) + EVIL_TOML + " ", text)
    for label in ("HEALTHY", "SAME-DRIFT", "AMBIGUOUS", "AMBIGUOUS-BY-INSTRUMENT", "UNDECIDABLE"):
        text = re.sub(rf'(?m)^{label} = """\n', lambda m: m.group(0) + EVIL_TOML + " ", text)
    text = text.replace('question = """\n', f'question = """\n{EVIL_TOML} ', 1)
    text = text.replace('text = """\n', f'text = """\n{EVIL_TOML} ', 1)
    path = tmp_path / "evil.toml"
    path.write_text(text)
    assert EVIL in load_preset(str(path)).interpretation["AMBIGUOUS"]
    return path


def _evil_run(tmp_path: Path) -> tuple[Path, Path, Path]:
    preset_path = _evil_preset(tmp_path)
    folder = tmp_path / f"run{EVIL[:2]}"  # the run folder's own name carries an escape
    folder.mkdir()
    recs = records(probes=RIGONLY_LIKE, run=EVIL)
    for r in recs:
        if r["kind"] == "eval":
            r["breakdown"] = {EVIL: 1.0, "rig": 2.0}
        if r["kind"] == "checkpoint":
            r["path"] = f"checkpoints/{EVIL}"
        if r["kind"] == "event":
            r["detail"] = EVIL
    (folder / "train_log.jsonl").write_text("".join(dumps(r) + "\n" for r in recs))
    (folder / "engine.out.log").write_text(f"engine says {EVIL}\n")
    freeze(RunFolder(folder), load_preset(str(preset_path)), ["python", EVIL], EVIL)
    registry = Registry(tmp_path / "registry.toml")
    registry.upsert(
        Entry(
            name=EVIL,
            run_dir=str(folder),
            host=EVIL,
            preset=EVIL,
            pid=0,
            launched_at=EVIL,
            status="finished",
        )
    )
    return preset_path, folder, registry.path


def _clean(out: str, where: str) -> None:
    bad = unsafe(out)
    assert not bad, f"{where}: {sorted(set(map(repr, bad)))} reached the output"


def test_plain_outputs_show_foreign_text_literally(tmp_path, capsys, monkeypatch):
    preset_path, folder, registry = _evil_run(tmp_path)
    monkeypatch.setenv("FONTAINE_REGISTRY", str(registry))
    # the unreachable ssh host is tried once, not for the first-connect window: its error
    # line, echoing the path, is what is checked
    monkeypatch.setenv("FONTAINE_SSH_CONNECT_S", "0")
    runs = [
        ["verdict", str(folder)],
        ["verdict", str(folder), "--json"],
        ["verdict", str(folder / "train_log.jsonl"), "--preset", str(preset_path)],
        ["replay", str(folder / "train_log.jsonl"), "--plain"],
        ["attach", str(folder), "--plain", "--until-end"],
        ["runs"],
        ["presets", "show", str(preset_path)],
        ["verdict", str(tmp_path / f"missing{EVIL}")],  # an error echoing a user path
        ["attach", f"ssh://h/{EVIL}", "--plain", "--ssh-config", str(tmp_path / EVIL)],
    ]
    for argv in runs:
        main(argv)
        got = capsys.readouterr()
        _clean(got.out, " ".join(argv[:2]) + " stdout")
        _clean(got.err, " ".join(argv[:2]) + " stderr")
        assert got.out or got.err
    main(["verdict", str(folder), "--json"])
    doc = json.loads(capsys.readouterr().out)  # still JSON, the text recoverable
    assert EVIL in doc["interpretation"]


def _screen_text(app) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in strip if not seg.control) for strip in strips)


async def test_every_screen_shows_foreign_text_literally(tmp_path):
    preset_path, folder, registry = _evil_run(tmp_path)
    app = console(
        folder / "train_log.jsonl",
        source=LocalRun(folder),
        preset=load_preset(str(preset_path)),
        registry=Registry(registry),
    )
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, 1000)
        await until(pilot, lambda: app.session.ledger.hash_ok is not None)
        await until(pilot, lambda: app.session.tail_total > 0)
        seen = {}
        for key in ("m", "p", "s", "v", "r", "question_mark"):
            await pilot.press(key)
            await pilot.pause(0.2)
            seen[key] = _screen_text(app)
            _clean(seen[key], f"screen after {key!r}")
        app.notify(f"a path {EVIL}")  # the app's own toasts go through the same door
        await pilot.pause(0.2)
    assert "\\x1b]52" in seen["v"]  # the interpretation is there, shown as text
    assert "\\x1b]52" in seen["r"]  # and the registry fields
    assert "engine says" in seen["m"]
