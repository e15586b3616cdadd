"""A launched [command] that prints credentials to stderr and exits 1: its crash line is
quoted masked wherever fontaine-tui says or records it (the plain report's exited-early alert,
attempts.jsonl's `detail`, babysit.jsonl's polls), as the secrets policy masks any text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnX0FCQ2RlZjEyMw"
SECRETS = {
    "token": "t0kVal9Qx",
    "password": "pw5ecretZ",
    "jwt": JWT,
    "hf": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "hex": "0123456789abcdef0123456789abcdef01234567",
    "npm": "npm_" + "a1B2c3D4e5" * 3 + "f6G7h8",
    "spoken": "hunter2x",
}
CRASH = f"""import sys
print("loading", flush=True)
print("login failed: passwd {SECRETS["spoken"]}", file=sys.stderr, flush=True)
print("token={SECRETS["token"]} password={SECRETS["password"]} "
      "Authorization: Bearer {JWT} {SECRETS["hf"]} key {SECRETS["hex"]} "
      "{SECRETS["npm"]} passwd {SECRETS["spoken"]}", file=sys.stderr, flush=True)
sys.exit(1)
"""
PRESET = f"""[run]
name = "crashp"
output_dir = "runs/crashp"
question = "Does it crash?"

[command]
argv = ["{sys.executable}", "crash.py"]

[source]
kind = "jsonl"

[verdict]
metric = "eval_loss"
anchor_step = 20
endpoint_step = 40
healthy_max = 0.0
drift_min = 0.2

[babysit]
first_poll_minutes = 0.001
cadence_minutes = 0.001
"""


def test_a_crash_line_with_credentials_is_quoted_masked_everywhere(tmp_path: Path) -> None:
    (tmp_path / "crash.py").write_text(CRASH)
    (tmp_path / "crashp.toml").write_text(PRESET)
    env = {k: v for k, v in os.environ.items() if k != "FONTAINE_NOTIFY"}
    res = subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "launch", "./crashp.toml", "--plain"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    run = tmp_path / "runs" / "crashp"
    raw = (run / "engine.out.log").read_text()
    assert SECRETS["hf"] in raw  # the command's own output is its own, as it wrote it
    attempts = (run / "attempts.jsonl").read_text()
    babysit = (run / "babysit.jsonl").read_text()
    surfaces = {
        "stdout": res.stdout,
        "stderr": res.stderr,
        "attempts.jsonl": attempts,
        "babysit.jsonl": babysit,
    }
    for where, text in surfaces.items():
        for name, secret in SECRETS.items():
            assert secret not in text, f"{name} in {where}"
    # the crash is still told, with the rest of its line kept
    assert "exited-early" in res.stdout and "exit 1" in res.stdout
    shown = "token=*** password=*** Authorization: Bearer *** *** key *** *** passwd ***"
    assert shown in res.stdout
    ends = [json.loads(line) for line in attempts.splitlines() if '"end"' in line]
    assert ends and ends[-1]["cause"] == "crashed" and ends[-1]["detail"] == shown
    polls = [json.loads(line) for line in babysit.splitlines()]
    said = [w["message"] for p in polls for w in p["warnings"] if w["rule"] == "exited-early"]
    assert said and all(shown in m for m in said)
