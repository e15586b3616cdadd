"""Every JSON output of the command line against its documented schema (docs/schemas/).

Each command runs in a real subprocess on real run folders; what it prints is read back and
validated with jsonschema against the schema file docs/json.md documents. The schemas close
their objects (additionalProperties false, every field required but the ones said optional),
so an output that gains or loses a documented field fails here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from fontaine_tui.core.host.memory import hostname
from fontaine_tui.core.preset.find import load_preset
from fontaine_tui.core.runfolder import RunFolder
from fontaine_tui.core.runs.registry import Entry, Registry
from fontaine_tui.core.verdict import prereg
from tests.logs import probe, records_upto, write_log

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "docs" / "schemas"

TRAINER = """import json, time
with open("log.jsonl", "a") as f:
    for s in range(1, 10000):
        f.write(json.dumps({"step": s, "loss": 1.0 / s}) + "\\n"); f.flush(); time.sleep(0.1)
"""


def schema(name: str) -> dict:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


def check(doc: dict, name: str) -> None:
    """`doc` holds to the schema, and would not with a field more or one less."""
    s = schema(name)
    jsonschema.validate(doc, s, cls=jsonschema.Draft202012Validator)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**doc, "undocumented": 1}, s, cls=jsonschema.Draft202012Validator)
    lost = {k: v for k, v in doc.items() if k != s["required"][-1]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(lost, s, cls=jsonschema.Draft202012Validator)


class Here:
    """A folder with run folders, a registry and a bank, and the CLI run against them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {
            **os.environ,
            "FONTAINE_REGISTRY": str(root / "state" / "babysit.toml"),
            "FONTAINE_BANK": str(root / "bank"),
        }
        self.env.pop("FONTAINE_NOTIFY", None)

    def run_folder(self, name: str, upto: int, blind: bool = False) -> Path:
        text = (ROOT / "presets" / "demosonly_1gpu.toml").read_text()
        if blind:
            text = text.replace("[verdict]\n", "[verdict]\nblind = true\n", 1)
        (self.root / f"{name}.toml").write_text(text)
        folder = self.root / name
        folder.mkdir()
        prereg.freeze(RunFolder(folder), load_preset(self.root / f"{name}.toml"), ["py"], "h")
        write_log(folder / "train_log.jsonl", records_upto(upto))
        Registry(Path(self.env["FONTAINE_REGISTRY"])).upsert(
            Entry(name=name, run_dir=str(folder), host=hostname())
        )
        return folder

    def cli(self, *args: str, code: int = 0) -> str:
        res = subprocess.run(
            [sys.executable, "-m", "fontaine_tui", *args],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=self.root,
            env=self.env,
        )
        assert res.returncode == code, res.stdout[-1000:] + res.stderr[-1000:]
        return res.stdout


@pytest.fixture(scope="module")
def here(tmp_path_factory: pytest.TempPathFactory) -> Here:
    h = Here(tmp_path_factory.mktemp("json"))
    h.run_folder("done", 1000)
    h.run_folder("blind", 750, blind=True)
    return h


def test_verdict_json_matches_its_schema(here):
    doc = json.loads(here.cli("verdict", "done", "-j", code=4))
    assert doc["schema"] == "fontaine-tui/verdict/2"
    check(doc, "verdict-2")


def test_the_verdict_json_pages_example_matches_its_schema():
    """docs/verdict-json.md's example (made by the code: a scale amendment, two rules that
    disagree) holds to the same schema."""
    page = (ROOT / "docs" / "verdict-json.md").read_text()
    block = page.split("```json\n", 1)[1].split("\n```", 1)[0]
    check(json.loads(block), "verdict-2")


def test_blinded_verdict_json_matches_its_schema(here):
    doc = json.loads(here.cli("verdict", "blind", "-j", code=7))
    check(doc, "blinded-1")


def test_runs_json_lines_match_their_schema(here):
    docs = [json.loads(line) for line in here.cli("runs", "-j").splitlines()]
    assert {d["name"] for d in docs} == {"done", "blind"}
    for doc in docs:
        check(doc, "runs-1")


def test_inspect_json_matches_its_schema(here):
    check(json.loads(here.cli("inspect", "done", "-j")), "inspect-1")
    from tensorboardX import SummaryWriter

    with SummaryWriter(str(here.root / "tb")) as w:
        for step in (1, 2, 3):
            w.add_scalar("eval/loss", 1.0 / step, step)
    drafted = json.loads(here.cli("inspect", "tb", "-j", "--preset-out", "draft.toml"))
    assert drafted["preset_out"] == "draft.toml"
    check(drafted, "inspect-1")


def test_bank_show_json_matches_its_schema(here):
    here.cli("bank", "add", "done", "--as", "ref")
    check(json.loads(here.cli("bank", "show", "ref", "-j")), "bank-1")


def test_bank_show_json_of_another_trainers_run_matches_its_schema(here):
    """A run another trainer wrote, banked by its word (`--ended`): no meta record (no host,
    world size or prereg.json), and the `format` it was read as and how its `ended` is known."""
    from tensorboardX import SummaryWriter

    with SummaryWriter(str(here.root / "theirs")) as w:
        for step in (10, 20, 30):
            w.add_scalar("eval/loss", 1.0 / step, step)
            w.add_scalar("train/loss", 2.0 / step, step)
    here.cli("bank", "add", "theirs", "--as", "theirs", "--ended")
    doc = json.loads(here.cli("bank", "show", "theirs", "-j"))
    assert doc["format"] == "tensorboard" and "bank --ended" in doc["ended"], doc
    check(doc, "bank-1")


def test_bank_show_json_of_a_run_banked_marked_matches_its_schema(here):
    """A run whose own evidence conflicts (two different probes for step 750), banked with
    --even-if-conflicting: its `conflicting_evidence` reasons are in the document."""
    recs = records_upto(1000)
    at = next(i for i, r in enumerate(recs) if r["kind"] == "eval" and r["step"] == 750) + 1
    recs.insert(at, probe(750, recs[at]["time"], 3.9, 3.3))
    write_log(here.root / "conflicting" / "train_log.jsonl", recs)
    here.cli("bank", "add", "conflicting", "--as", "marked", "--even-if-conflicting")
    doc = json.loads(here.cli("bank", "show", "marked", "-j"))
    [why] = doc["conflicting_evidence"]
    assert why.startswith("two different probes for step 750"), doc
    check(doc, "bank-1")


def test_get_json_matches_its_schema(here):
    check(json.loads(here.cli("get", "done", "-m", "eval_chunk_mae", "--json")), "series-1")


def test_launch_and_stop_json_match_their_schemas(here):
    (here.root / "trainer.py").write_text(TRAINER)
    (here.root / "cmd.toml").write_text(f"""[run]
name = "cmdrun"
output_dir = "runs/cmdrun"
[command]
argv = ["{sys.executable}", "{here.root / "trainer.py"}"]
[source]
kind = "jsonl"
[verdict]
metric = "eval_loss"
anchor_step = 20
endpoint_step = 40
healthy_max = 0.0
drift_min = 0.2
""")
    launched = json.loads(here.cli("launch", "cmd.toml", "--detach", "--json"))
    try:
        check(launched, "launched-1")
    finally:  # the trainer is stopped whatever the check said
        stopped = here.cli("stop", launched["run_dir"], "--yes", "--json").strip().splitlines()
    check(json.loads(stopped[-1]), "exit-1")


@pytest.mark.parametrize("name", sorted(p.name[: -len(".schema.json")] for p in SCHEMAS.iterdir()))
def test_the_schemas_close_their_objects_and_docs_json_lists_them(name):
    """Each schema is valid, closed, and has its section in docs/json.md naming every field
    in one table (one header row)."""
    s = schema(name)
    jsonschema.Draft202012Validator.check_schema(s)
    props = s["properties"]
    assert s["additionalProperties"] is False and set(s["required"]) <= set(props)
    page = (ROOT / "docs" / "json.md").read_text()
    sections = [x for x in page.split("\n## ")[1:] if f"schemas/{name}.schema.json" in x]
    assert len(sections) == 1, f"docs/json.md: expected one section linking {name}"
    header = sections[0].count("| field | type | meaning |")
    assert header == 1, f"docs/json.md: {name}'s table has {header} header rows, expected one"
    for field in props:
        assert f"`{field}`" in sections[0], f"docs/json.md does not list {name}'s {field}"
