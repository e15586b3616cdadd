"""`fontaine-tui notify test` against a real HTTP server on 127.0.0.1; the webhook token is in
no output and in no file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fontaine_tui.cli import main
from tests.core.notify.server import dead_port

TOKEN = "SECRETTOKEN"


@pytest.fixture
def config(tmp_path_factory, tmp_path, monkeypatch):
    """config.toml outside tmp_path (it holds the token by necessity); cwd is tmp_path."""
    xdg = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.delenv("FONTAINE_NOTIFY", raising=False)
    monkeypatch.chdir(tmp_path)
    path = xdg / "fontaine-tui" / "config.toml"
    path.parent.mkdir(parents=True)
    return path


def no_token_anywhere(capsys, tmp_path: Path) -> tuple[str, str]:
    out, err = capsys.readouterr()
    assert TOKEN not in out and TOKEN not in err
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert TOKEN.encode() not in f.read_bytes(), f
    return out, err


def test_every_destination_gets_the_message(hook, config, capsys, tmp_path):
    slack = hook.url(f"/services/T000/B000/{TOKEN}")
    config.write_text(
        f'[[notify]]\nurl = "{slack}"\nservice = "slack"\n\n'
        f'[[notify]]\nurl = "{hook.url(f"/{TOKEN}")}"\nlevel = "alert"\n'
    )
    assert main(["notify", "test"]) == 0
    out, err = no_token_anywhere(capsys, tmp_path)
    assert out.splitlines() == [
        f"slack    http://127.0.0.1:{hook.port}/services/***/***/***  delivered",
        f"generic  {hook.url('/***')}  skipped: its least level is alert",
    ]
    assert err == ""
    (req,) = hook.requests
    assert req.path.endswith(TOKEN)
    assert json.loads(req.body)["blocks"][0]["text"]["text"] == "fontaine-tui test notification"


def test_a_failed_destination_exits_1_with_its_reason(hook, config, capsys, tmp_path, monkeypatch):
    hook.fail(500, 10)
    config.write_text(
        f'[[notify]]\nurl = "{hook.url(f"/services/T000/B000/{TOKEN}")}"\nservice = "slack"\n'
    )
    monkeypatch.setenv("FONTAINE_NOTIFY", f"http://127.0.0.1:{dead_port()}/h?key={TOKEN}")
    assert main(["notify", "test", "--level", "alert"]) == 1
    out, _ = no_token_anywhere(capsys, tmp_path)
    lines = out.splitlines()
    assert lines[0] == (
        f"slack    http://127.0.0.1:{hook.port}/services/***/***/***  "
        "failed: HTTP 500 Internal Server Error"
    )
    assert (
        lines[1].startswith("generic  http://127.0.0.1:") and "/***?key=***  failed: " in lines[1]
    )
    assert "cannot connect" in lines[1]
    assert len(hook.requests) == 4  # the default: 4 tries


def test_url_sends_to_that_url_only(hook, config, capsys, tmp_path):
    config.write_text('[[notify]]\nurl = "http://127.0.0.1:9/not-this-one"\n')
    assert main(["notify", "test", "--url", hook.url(f"/x?token={TOKEN}"), "--level", "warn"]) == 0
    out, _ = no_token_anywhere(capsys, tmp_path)
    assert out == f"generic  {hook.url('/***?token=***')}  delivered\n"
    body = json.loads(hook.requests[0].body)
    assert body["level"] == "warn" and body["title"] == "fontaine-tui test notification"


def test_no_destination_is_exit_2_in_one_line(config, capsys, tmp_path):
    assert main(["notify", "test"]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1
    assert err.startswith("fontaine-tui: error: no notification destination: ")
    assert str(config) in err and "FONTAINE_NOTIFY" in err


def test_a_bad_config_is_exit_2_naming_the_key(config, capsys, tmp_path):
    config.write_text(
        f'[[notify]]\nurl = "https://hooks.slack.com/services/T/B/{TOKEN}"\nlevel = "urgent"\n'
    )
    assert main(["notify", "test"]) == 2
    _, err = no_token_anywhere(capsys, tmp_path)
    assert err == (
        f"fontaine-tui: error: {config}: notify[0].level: expected one of info, "
        "warn, alert, got 'urgent'\n"
    )


# a control character inside the token: the URL is refused when the destination is made, in
# one line naming the key, with neither half of the token in it (http.client's InvalidURL
# quotes the URL whole, escaped, where no redaction finds it)
CONTROL = {"tab": "\t", "newline": "\n", "x01": "\x01", "del": "\x7f"}


def in_toml(text: str) -> str:
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


def no_token_halves(text: str) -> None:
    assert "SECRET" not in text and "TOKEN" not in text, text
    assert "InvalidURL" not in text and "Traceback" not in text, text


@pytest.mark.parametrize("char", CONTROL.values(), ids=CONTROL.keys())
def test_a_config_url_with_a_control_character_is_refused(hook, config, capsys, tmp_path, char):
    url = hook.url(f"/services/T000/B000/SECRET{char}TOKEN")
    config.write_text(f'[[notify]]\nurl = "{in_toml(url)}"\nservice = "slack"\n')
    assert main(["notify", "test"]) == 2
    _, err = capsys.readouterr()
    no_token_halves(err)
    assert err.count("\n") == 1 and f"{config}: notify[0].url: " in err, err
    assert "control character" in err and hook.requests == []


@pytest.mark.parametrize("char", CONTROL.values(), ids=CONTROL.keys())
def test_an_environment_url_with_a_control_character_is_refused(
    hook, config, capsys, monkeypatch, char
):
    monkeypatch.setenv("FONTAINE_NOTIFY", hook.url(f"/hook/SECRET{char}TOKEN"))
    assert main(["notify", "test"]) == 2
    _, err = capsys.readouterr()
    no_token_halves(err)
    assert err.count("\n") == 1 and "FONTAINE_NOTIFY: url: " in err, err
    assert "control character" in err and hook.requests == []
    assert main(["notify", "test", "--url", hook.url(f"/hook/SECRET{char}TOKEN")]) == 2
    _, err = capsys.readouterr()
    no_token_halves(err)
    assert err.count("\n") == 1 and "--url: url: " in err, err


@pytest.mark.parametrize("char", CONTROL.values(), ids=CONTROL.keys())
def test_a_preset_url_with_a_control_character_is_refused(config, capsys, tmp_path, char):
    from tests.core.launch.conftest import preset_variant

    path = preset_variant(tmp_path, "smoke", "hooked")
    path.write_text(
        path.read_text() + '\n[[notify]]\nurl = "https://hooks.slack.com/services/'
        f'T000/B000/SECRET{in_toml(char)}TOKEN"\n'
    )
    assert main(["presets", "show", str(path)]) == 2
    out, err = capsys.readouterr()
    no_token_halves(out + err)
    assert err.count("\n") == 1 and "notify[0].url" in err and "control character" in err, err


@pytest.mark.parametrize("char", CONTROL.values(), ids=CONTROL.keys())
def test_a_url_env_url_with_a_control_character_is_refused(hook, config, tmp_path, char):
    from fontaine_tui.core.preset.find import load_preset
    from fontaine_tui.model.notices import RunNotices
    from tests.core.launch.conftest import preset_variant

    path = preset_variant(tmp_path, "smoke", "hooked")
    path.write_text(path.read_text() + '\n[[notify]]\nurl_env = "RUN_HOOK"\n')
    said: list[str] = []
    notices = RunNotices.configured(
        "smoke", said.append, load_preset(path), {"RUN_HOOK": hook.url(f"/x/SECRET{char}TOKEN")}
    )
    assert notices is None and len(said) == 1, said
    no_token_halves(said[0])
    assert "notify[0].url" in said[0] and "control character" in said[0], said


def test_presets_show_redacts_a_notify_url(config, capsys, tmp_path):
    from tests.core.launch.conftest import preset_variant

    path = preset_variant(tmp_path.parent, "smoke", "hooked")  # the file holds the token
    path.write_text(
        path.read_text() + '\n[[notify]]\nurl = "https://hooks.slack.com/services/'
        f'T000/B000/{TOKEN}"\n\n[[notify]]\nurl = "https://ntfy.sh/{TOKEN}2"\n'
    )
    assert main(["presets", "show", str(path)]) == 0
    out, _ = no_token_anywhere(capsys, tmp_path)
    assert 'url = "https://hooks.slack.com/services/***/***/***"' in out
    assert 'url = "https://ntfy.sh/***"' in out
    assert "[recipe]" in out  # the rest as written
