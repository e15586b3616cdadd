"""Where notifications go: `[[notify]]` tables in the user's config.toml, and FONTAINE_NOTIFY.

```toml
# $XDG_CONFIG_HOME/fontaine-tui/config.toml (else ~/.config/fontaine-tui/config.toml)
[[notify]]
url = "https://hooks.slack.com/services/T000/B000/XXXX"
level = "warn"            # info | warn | alert: the least level sent here (default info)

[[notify]]
url = "https://ntfy.sh/my-runs"
service = "ntfy"          # optional: slack | discord | ntfy | generic | apprise
```

`FONTAINE_NOTIFY=URL[,URL]` adds destinations at level info. The service is recognized from
the URL (`detect_service`); `service` overrides it. A destination's URL is never in its repr
or in an error line: `Destination.label` is the redacted form (core/secrets.py).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fontaine_tui.core import tomlfile
from fontaine_tui.core.childenv import NOTIFY_ENV
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.readfile import read_text
from fontaine_tui.core.secrets import redact_url
from fontaine_tui.core.text import literal

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

LEVELS = ("info", "warn", "alert")
SERVICES = ("slack", "discord", "ntfy", "generic", "apprise")
KEYS = ("url", "level", "service")
ENV = NOTIFY_ENV  # "FONTAINE_NOTIFY"
APPRISE_HINT = "pip install 'fontaine-tui[notify]' (the apprise library)"
_DISCORD_HOSTS = ("discord.com", "discordapp.com", "canary.discord.com", "ptb.discord.com")


@dataclass(frozen=True)
class Destination:
    url: str = field(repr=False)
    service: str
    level: str = "info"
    source: str = ""  # "config.toml notify[0]", "FONTAINE_NOTIFY", "--url"

    @property
    def label(self) -> str:
        """The URL as it may be shown: tokens replaced by *** (this service's, core/secrets.py)."""
        return redact_url(self.url, self.service)

    @property
    def post_url(self) -> str:
        """Where the POST goes (ntfy://host/topic is https://host/topic)."""
        scheme, rest = self.url.split(":", 1)
        if self.service == "ntfy" and scheme.lower() == "ntfy":
            return "https:" + rest
        return self.url

    def accepts(self, level: str) -> bool:
        return LEVELS.index(level) >= LEVELS.index(self.level)

    def __repr__(self) -> str:
        return f"Destination({self.service}, {self.label}, level={self.level})"


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "fontaine-tui" / "config.toml"


def _apprise() -> Any:
    try:
        return importlib.import_module("apprise")
    except ImportError:
        return None


def detect_service(url: str) -> str:
    """slack, discord, ntfy, generic or apprise, from the URL alone; ValueError if none."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError as exc:
        raise ValueError("a URL that can be parsed") from exc
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        return _web_service(host, parts.path)
    if scheme == "ntfy":
        if not host or not parts.path.strip("/"):
            raise ValueError("ntfy://HOST/TOPIC")
        return "ntfy"
    if not scheme:
        raise ValueError("a URL with a scheme (https://, ntfy://, or one apprise knows)")
    return "apprise"


def _web_service(host: str, path: str) -> str:
    """The service of an http(s) URL by its host (and Discord's path): generic if none."""
    if not host:
        raise ValueError("an http(s) URL with a host")
    if host == "hooks.slack.com":
        return "slack"
    if host in _DISCORD_HOSTS and path.startswith("/api/webhooks/"):
        return "discord"
    if host == "ntfy.sh" or host.endswith(".ntfy.sh"):
        return "ntfy"
    return "generic"


def _at(source: str, key: str) -> str:
    """Where a notify setting comes from, as an error line names it.

    "PATH: notify[0].url" for a config table, "FONTAINE_NOTIFY: url" otherwise."""
    return f"{source}.{key}" if source.endswith("]") else f"{source}: {key}"


def _check_apprise(url: str, where: str) -> None:
    lib = _apprise()
    if lib is None:
        raise InputError(
            f"{where}: a {urlsplit(url).scheme}:// URL is sent through the "
            f"apprise library, which is not installed: {APPRISE_HINT}"
        )
    if not lib.Apprise().add(url):
        raise InputError(f"{where}: apprise does not know this URL ({redact_url(url)})")


def _unsafe_char(url: str) -> str | None:
    """The first control character or white space in `url`, or None.

    Such a URL is never sent: an HTTP client refuses it with an error that quotes the URL, token
    and all."""
    for c in url:
        if ord(c) < 0x21 or 0x7F <= ord(c) < 0xA0 or c.isspace():
            return c
    return None


def make_destination(
    url: str, *, level: str = "info", service: str | None = None, source: str = "--url"
) -> Destination:
    """One destination, checked; InputError naming `source` and what was expected."""
    if (c := _unsafe_char(url)) is not None:
        code = f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
        raise InputError(
            f"{_at(source, 'url')}: expected a URL without control characters "
            f"or white space, got {code} in {literal(redact_url(url))}"
        )
    if level not in LEVELS:
        raise InputError(
            f"{_at(source, 'level')}: expected one of {', '.join(LEVELS)}, got {level!r}"
        )
    if service is None:
        try:
            service = detect_service(url)
        except ValueError as exc:
            raise InputError(f"{_at(source, 'url')}: expected {exc}") from None
    elif service not in SERVICES:
        raise InputError(
            f"{_at(source, 'service')}: expected one of {', '.join(SERVICES)}, got {service!r}"
        )
    elif service != "apprise" and urlsplit(url).scheme.lower() not in ("http", "https", "ntfy"):
        raise InputError(f"{_at(source, 'url')}: expected an http(s) URL for service {service}")
    if service == "apprise":
        _check_apprise(url, _at(source, "url"))
    return Destination(url=url, service=service, level=level, source=source)


def parse_config(data: Mapping[str, Any], path: Path | str) -> list[Destination]:
    """The `[[notify]]` tables of a parsed config.toml (other tables are not ours)."""
    tables = data.get("notify", [])
    if isinstance(tables, dict):
        tables = [tables]
    if not isinstance(tables, list):
        raise InputError(f"{path}: notify: expected [[notify]] tables, got {type(tables).__name__}")
    return [_table_destination(table, f"{path}: notify[{i}]") for i, table in enumerate(tables)]


def _table_destination(table: object, where: str) -> Destination:
    """One `[[notify]]` table's destination, checked; InputError naming `where` and its key."""
    if not isinstance(table, dict):
        raise InputError(f"{where}: expected a table with url, got {type(table).__name__}")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise InputError(f"{where}.{unknown[0]}: unknown key (expected {', '.join(KEYS)})")
    url = table.get("url")
    if not isinstance(url, str) or not url.strip():
        raise InputError(
            f"{where}.url: expected a URL string, got "
            f"{'nothing' if url is None else type(url).__name__}"
        )
    for key in ("level", "service"):
        if key in table and not isinstance(table[key], str):
            raise InputError(f"{where}.{key}: expected a string, got {type(table[key]).__name__}")
    return make_destination(
        url.strip(),
        level=table.get("level", "info"),
        service=table.get("service"),
        source=where,
    )


def load_config(path: Path) -> list[Destination]:
    if not path.exists():
        return []
    try:
        data = tomlfile.loads(read_text(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot be read ({type(exc).__name__})") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: expected TOML: {exc}") from None
    return parse_config(data, path)


def from_env(value: str) -> list[Destination]:
    return [make_destination(u.strip(), source=ENV) for u in value.split(",") if u.strip()]


def load_destinations(env: Mapping[str, str] | None = None) -> list[Destination]:
    """config.toml's destinations, then FONTAINE_NOTIFY's (the same URL once)."""
    env = os.environ if env is None else env
    found = load_config(config_path(env)) + from_env(env.get(ENV, ""))
    seen: set[str] = set()
    out = []
    for d in found:
        if d.url not in seen:
            seen.add(d.url)
            out.append(d)
    return out
