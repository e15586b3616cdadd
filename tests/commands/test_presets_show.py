"""`fontaine-tui presets show`: a preset printed as written, each credential in it masked by
its parsed value (core/secrets.py), so a TOML escape or a line continuation hides none."""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

# three tokens, each hidden from a plain text search of the file a different way
ESCAPED = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"  # written "\u0068f_...": no "hf_" in the file
CONTINUED = "hf_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789"  # cut by a line-ending backslash
COMMENTED = "hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa987654"
WEBHOOK = "https://hooks.slack.com/services/T0/B0/XSECRETXX"

PRESET = (
    "[run]\n"
    'name = "own"\n'
    'output_dir = "runs/own"\n'
    'question = "Does it train? asked with \\u0068' + ESCAPED[1:] + ' by mistake"\n'
    f"# the hub token was {COMMENTED}\n"
    "\n"
    "[source]\n"
    'kind = "hf_trainer"  # a kind, not a token\n'
    "\n"
    "[verdict]\n"
    'metric = "eval_loss"\n'
    "anchor_step = 100\n"
    "endpoint_step = 200\n"
    "healthy_max = 0.0\n"
    "drift_min = 0.2\n"
    'reference = "base"\n'
    "\n"
    "[comparators.base]\n"
    "delta = 1.0\n"
    'description = """the base run, banked with ' + CONTINUED[:19] + "\\\n"
    "    " + CONTINUED[19:] + ' in its notes"""\n'
    "\n"
    "[[notify]]\n"
    f'url = "{WEBHOOK}"\n'
)


def _show(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fontaine_tui", "presets", "show", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_token_escaped_or_continued_in_the_toml_is_shown_masked(tmp_path):
    path = tmp_path / "own.toml"
    path.write_text(PRESET)
    assert ESCAPED not in PRESET and CONTINUED not in PRESET  # no plain search finds them
    res = _show(path)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    for token in (ESCAPED[3:12], CONTINUED[3:12], CONTINUED[19:], COMMENTED[3:], "XSECRETXX"):
        assert token not in out, out
    lines = out.splitlines()
    assert 'question = "Does it train? asked with *** by mistake"' in lines, out
    assert '''description = "the base run, banked with *** in its notes"''' in lines, out
    assert "# the hub token was ***" in lines, out
    assert 'url = "https://hooks.slack.com/services/***/***/***"' in lines, out


def test_nothing_but_the_credentials_is_changed(tmp_path):
    path = tmp_path / "own.toml"
    path.write_text(PRESET)
    shown = _show(path).stdout.splitlines()
    assert shown[-2] == f"# path: {path}", shown
    diff = list(difflib.ndiff(PRESET.splitlines(), shown[:-2]))
    gone = [line[2:] for line in diff if line.startswith("- ")]
    came = [line[2:] for line in diff if line.startswith("+ ")]
    # the question, the comment, the two lines of the continued description, the webhook
    assert [g.split(" ")[0] for g in gone] == ["question", "#", "description", "", "url"], diff
    assert len(came) == 4, diff  # the description on one line


def test_the_notification_url_is_masked_wherever_the_preset_repeats_it(tmp_path):
    """A generic webhook's URL is its secret: written again in a comment or the question, it
    is shown as the `url` key shows it, and the rest of the preset as written."""
    url = "https://example.org/notify/abc123secretkey"
    text = (
        PRESET.replace(WEBHOOK, url)
        .replace("[[notify]]\n", f"# alerts go to {url}\n[[notify]]\n")
        .replace("by mistake", f"(alerts: {url})")
    )
    path = tmp_path / "own.toml"
    path.write_text(text)
    res = _show(path)
    assert res.returncode == 0, res.stderr
    assert "abc123secretkey" not in res.stdout, res.stdout
    assert res.stdout.count("https://example.org/***/***") == 3, res.stdout
    assert "[[notify]]" in res.stdout


# a comment after a multi-line string that closes with 3, 4 or 5 quotes (up to two of them
# the string's own), each with a quote of its own that must not be read as a string's start
CLOSED_THEN_COMMENTED = (
    "[run]\n"
    'name = "own"\n'
    'output_dir = """runs/own""""" # db_password = "s3cr3t-pw"\n'
    'question = """Does it train? say "yes"""" # password="hunter2"\n'
    "\n"
    "[source]\n"
    'kind = \'hf_trainer\' # "api_key": "k3y-in-a-comment"\n'
    "\n"
    "[verdict]\n"
    'metric = "eval_loss"\n'
    "anchor_step = 100\n"
    "endpoint_step = 200\n"
    "healthy_max = 0.0\n"
    "drift_min = 0.2\n"
    'reference = "base"\n'
    "\n"
    "[comparators.base]\n"
    "delta = 1.0\n"
    "description = '''the base run\n"
    "as banked, it's 'ours''''' # token='tok-abc-123'\n"
)


def test_a_comment_after_a_string_closed_by_four_or_five_quotes_is_masked(tmp_path):
    path = tmp_path / "own.toml"
    path.write_text(CLOSED_THEN_COMMENTED)
    res = _show(path)
    assert res.returncode == 0, res.stderr
    for secret in ("hunter2", "k3y-in-a-comment", "s3cr3t-pw", "tok-abc-123"):
        assert secret not in res.stdout, res.stdout
    shown = res.stdout.splitlines()
    expected = CLOSED_THEN_COMMENTED
    for secret in ("hunter2", "k3y-in-a-comment", "s3cr3t-pw", "tok-abc-123"):
        expected = expected.replace(secret, "***")
    assert shown[:-2] == expected.splitlines(), res.stdout  # all else as written


def test_a_comment_with_an_apostrophe_is_masked_after_it(tmp_path):
    """An apostrophe opens no string in a comment: the password after `don't` is masked, and
    the comment kept as written around it."""
    text = PRESET.replace(
        "[source]\n", "# don't share password=hunter2, ask \"ops for --api-key k3yvalue\n[source]\n"
    )
    path = tmp_path / "own.toml"
    path.write_text(text)
    res = _show(path)
    assert res.returncode == 0, res.stderr
    assert "hunter2" not in res.stdout and "k3yvalue" not in res.stdout, res.stdout
    assert "# don't share password=***, ask \"ops for --api-key ***" in res.stdout.splitlines()


def test_a_comment_whose_apostrophes_pair_up_is_masked_inside_them(tmp_path):
    """Two apostrophes of prose (`don't ... it's`) are no quoted run that hides a password,
    nor is a dict's repr in a comment: each value is masked, the comment kept as written."""
    text = PRESET.replace(
        "[source]\n",
        "# don't share password=hunter2, it's prod\n"
        "# it's {'hub_token': 'k3y v4lue'}, don't\n"
        "[source]\n",
    )
    path = tmp_path / "own.toml"
    path.write_text(text)
    res = _show(path)
    assert res.returncode == 0, res.stderr
    assert "hunter2" not in res.stdout and "k3y" not in res.stdout, res.stdout
    lines = res.stdout.splitlines()
    assert "# don't share password=***, it's prod" in lines, res.stdout
    assert "# it's {'hub_token': '***'}, don't" in lines, res.stdout


def test_a_comment_saying_a_key_in_words_or_a_table_is_masked(tmp_path):
    """A comment that says a secret in a sentence (`my hub_token is V`), glued by a colon, a
    tab apart or percent-encoded in a URL is masked; a sentence going on is kept."""
    text = PRESET.replace(
        "[source]\n",
        "# my hub_token is Zq8xP2mK9vR4tL7w\n"
        "# HF_TOKEN:Zq8xP2mK9vR4tL7w and WANDB_API_KEY\tZq8xP2mK9vR4tL7w\n"
        "# callback https://x.org/cb?token%3DZq8xP2mK9vR4tL7w\n"
        "# the hub_token is read from the environment\n"
        "[source]\n",
    )
    path = tmp_path / "own.toml"
    path.write_text(text)
    res = _show(path)
    assert res.returncode == 0, res.stderr
    assert "Zq8x" not in res.stdout, res.stdout
    lines = res.stdout.splitlines()
    assert "# my hub_token is ***" in lines, res.stdout
    assert "# HF_TOKEN:*** and WANDB_API_KEY\t***" in lines, res.stdout
    assert "# callback https://x.org/cb?token%3D***" in lines, res.stdout
    assert "# the hub_token is read from the environment" in lines, res.stdout


def test_a_netrc_or_an_argv_written_down_lines_is_shown_masked(tmp_path):
    """A .netrc entry and a `-p` password a word a line, in a multi-line string or down a
    run of comments, and a connection string that opens with its key: each secret masked,
    every other line as written."""
    netrc = "machine api.x.org\n  login me\n  account Zq9accZ\n  password Zq9secZ"
    text = PRESET.replace(
        'question = "Does it train? asked with \\u0068' + ESCAPED[1:] + ' by mistake"\n',
        f'question = """Does it train?\n{netrc}\nmysql\n-p\nZq9pwZ"""\n'
        + "".join(f"# {line}\n" for line in netrc.split("\n"))
        + "# docker login -u me -p\n#   Zq9pw2Z\n"
        + "# AccountKey=Zq9keyZ==;AccountName=acct;EndpointSuffix=core.windows.net\n",
    )
    path = tmp_path / "own.toml"
    path.write_text(text)
    res = _show(path)
    assert res.returncode == 0, res.stderr
    assert "Zq9" not in res.stdout, res.stdout
    lines = res.stdout.splitlines()
    assert (
        'question = "Does it train?\\nmachine api.x.org\\n  login me\\n  account ***\\n'
        '  password ***\\nmysql\\n-p\\n***"' in lines
    ), res.stdout
    for line in (
        "# machine api.x.org",
        "#   login me",
        "#   account ***",
        "#   password ***",
        "# docker login -u me -p",
        "#   ***",
        "# AccountKey=***;AccountName=acct;EndpointSuffix=core.windows.net",
        "# the hub token was ***",
    ):
        assert line in lines, res.stdout
