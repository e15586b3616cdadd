"""config.toml's [[notify]] tables, FONTAINE_NOTIFY, the service told apart by the URL."""

from __future__ import annotations

import pytest

from fontaine_tui.core.errors import InputError
from fontaine_tui.core.notify.destinations import (
    detect_service,
    load_destinations,
    make_destination,
)

SLACK = "https://hooks.slack.com/services/T000/B000/SECRETTOKEN"
DISCORD = "https://discord.com/api/webhooks/123456/SECRETTOKEN"


@pytest.mark.parametrize(
    "url, service",
    [
        (SLACK, "slack"),
        (DISCORD, "discord"),
        ("https://discordapp.com/api/webhooks/1/SECRETTOKEN", "discord"),
        ("https://discord.com/channels/1/2", "generic"),  # not a webhook
        ("https://ntfy.sh/my-runs", "ntfy"),
        ("ntfy://ntfy.example.org/my-runs", "ntfy"),
        ("https://example.org/hook", "generic"),
        ("http://127.0.0.1:8080/x", "generic"),
        ("apprise://apprise.example.org/key", "apprise"),
        ("tgram://bottoken/chatid", "apprise"),
    ],
)
def test_the_service_is_told_apart_by_the_url(url, service):
    assert detect_service(url) == service


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_config_tables_and_the_environment(no_user_config, monkeypatch):
    write(
        no_user_config,
        f"""
[engine]
unrelated = 1

[[notify]]
url = "{SLACK}"
level = "warn"

[[notify]]
url = "http://127.0.0.1:9/topic"
service = "ntfy"
""",
    )
    monkeypatch.setenv("FONTAINE_NOTIFY", f"https://example.org/a, {SLACK}")
    dests = load_destinations()
    assert [(d.service, d.level) for d in dests] == [
        ("slack", "warn"),
        ("ntfy", "info"),
        ("generic", "info"),
    ]  # SLACK once
    assert dests[0].source == f"{no_user_config}: notify[0]"
    assert dests[2].source == "FONTAINE_NOTIFY"
    assert not dests[0].accepts("info") and dests[0].accepts("warn") and dests[0].accepts("alert")
    assert dests[1].accepts("info")
    assert "SECRETTOKEN" not in repr(dests) and "SECRETTOKEN" not in str(dests)


def test_no_config_no_destination():
    assert load_destinations() == []


def test_ntfy_scheme_posts_over_https():
    d = make_destination("ntfy://ntfy.example.org/my-runs")
    assert d.post_url == "https://ntfy.example.org/my-runs"


@pytest.mark.parametrize(
    "body, expected",
    [
        (
            '[[notify]]\nurl = "https://x.org/h"\nlevel = "loud"\n',
            "notify[0].level: expected one of info, warn, alert, got 'loud'",
        ),
        ('[[notify]]\nlevel = "info"\n', "notify[0].url: expected a URL string, got nothing"),
        ("[[notify]]\nurl = 3\n", "notify[0].url: expected a URL string, got int"),
        (
            '[[notify]]\nurl = "https://x.org/h"\nchannel = "a"\n',
            "notify[0].channel: unknown key (expected url, level, service)",
        ),
        (
            '[[notify]]\nurl = "https://x.org/h"\nservice = "pager"\n',
            "notify[0].service: expected one of slack, discord, ntfy, generic, apprise, got 'pager'",
        ),
        (
            '[[notify]]\nurl = "hooks.slack.com/services/T/B/SECRETTOKEN"\n',
            "notify[0].url: expected a URL with a scheme",
        ),
        ('notify = "https://x.org/h"\n', "notify: expected [[notify]] tables, got str"),
        ('[[notify]\nurl = "x"\n', "expected TOML: "),
    ],
)
def test_a_bad_config_is_one_line_naming_file_and_key(no_user_config, body, expected):
    write(no_user_config, body)
    with pytest.raises(InputError) as err:
        load_destinations()
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(f"{no_user_config}: ")
    assert expected in line
    assert "SECRETTOKEN" not in line


def test_a_bad_environment_url_names_the_variable(monkeypatch):
    monkeypatch.setenv("FONTAINE_NOTIFY", "https://")
    with pytest.raises(InputError, match=r"^FONTAINE_NOTIFY: url: expected an http\(s\) URL "):
        load_destinations()


def test_apprise_urls_without_the_library_name_the_install(no_user_config, monkeypatch):
    """Where the optional library is absent (hidden here: None in sys.modules makes the import
    fail), an apprise URL names the install."""
    import sys

    monkeypatch.setitem(sys.modules, "apprise", None)
    write(no_user_config, '[[notify]]\nurl = "tgram://SECRETTOKEN/chatid"\n')
    with pytest.raises(InputError) as err:
        load_destinations()
    line = str(err.value)
    assert "pip install" in line and "apprise" in line and "notify[0].url" in line
    assert "SECRETTOKEN" not in line and "\n" not in line
