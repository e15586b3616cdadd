"""One notification (`Message`) and what each service is sent for it.

Slack incoming webhook: `{"text", "blocks"}` (header, section mrkdwn, fields, context).
Discord webhook: `{"content", "embeds", "allowed_mentions"}` (one embed; colour by level;
no @mentions from run text). ntfy: the text as the body, Title/Priority/Tags headers.
Generic: `{"level", "title", "text", "run", "step", "time"}`. Long text is cut with an
ellipsis at each service's limit (the constants below). A message's `detail` (its fields in
words, where they say more than the text) ends the text of the services that show no fields
(generic, ntfy, apprise: `Message.full_text`); Slack and Discord show the fields instead.
"""

from __future__ import annotations

import json
import time as _time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.header import Header
from typing import Any

ELLIPSIS = "…"
SLACK_TEXT = 3000  # a section's text
SLACK_HEADER = 150  # a header block's plain_text
SLACK_FIELD = 2000
SLACK_FIELDS = 10
DISCORD_CONTENT = 2000
DISCORD_DESCRIPTION = 4096
DISCORD_TITLE = 256
DISCORD_FIELD_NAME = 256
DISCORD_FIELD_VALUE = 1024
DISCORD_FIELDS = 25
DISCORD_EMBED_TOTAL = 6000
NTFY_BODY_BYTES = 4096  # past this ntfy turns the message into an attachment
COLORS = {"info": 0x3498DB, "warn": 0xE67E22, "alert": 0xE74C3C}
NTFY_PRIORITY = {"info": "3", "warn": "4", "alert": "5"}
NTFY_TAGS = {"info": "information_source", "warn": "warning", "alert": "rotating_light"}
APPRISE_TYPE = {"info": "info", "warn": "warning", "alert": "failure"}


@dataclass(frozen=True)
class Message:
    level: str
    title: str
    text: str
    run: str = ""
    step: int | None = None
    time: float = field(default_factory=_time.time)
    fields: dict[str, str] = field(default_factory=dict)
    detail: str = ""  # for the services without fields: the text's last lines

    @property
    def full_text(self) -> str:
        """The text, then `detail`: what generic, ntfy and apprise send."""
        return "\n".join(p for p in (self.text, self.detail) if p)

    @property
    def iso_time(self) -> str:
        return datetime.fromtimestamp(self.time, timezone.utc).isoformat(timespec="seconds")

    def context(self) -> str:
        """The message's run, step, time and level on one line, joined by " · ".

        For example "run demosonly · step 250 · 2025-01-01T00:00:00+00:00 · WARN". An absent
        run or step is left out."""
        parts = [
            f"run {self.run}" if self.run else "",
            f"step {self.step}" if self.step is not None else "",
            self.iso_time,
            self.level.upper(),
        ]
        return " · ".join(p for p in parts if p)


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(ELLIPSIS)] + ELLIPSIS


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack_mrkdwn(text: str, limit: int) -> str:
    """Escaped (&, <, > are Slack's control characters) and cut to `limit` after escaping."""
    out = _slack_escape(text)
    if len(out) <= limit:
        return out
    raw = text[: limit - len(ELLIPSIS)]
    while len(_slack_escape(raw)) > limit - len(ELLIPSIS):
        raw = raw[: len(raw) - (len(_slack_escape(raw)) - (limit - len(ELLIPSIS)))]
    return _slack_escape(raw) + ELLIPSIS


def slack(m: Message) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {"type": "plain_text", "text": truncate(m.title or m.level, SLACK_HEADER)},
        },
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": _slack_mrkdwn(m.text or " ", SLACK_TEXT)},
        },
    ]
    if m.fields:
        blocks.append(
            {
                "type": "section",
                "fields": [
                    {"type": "mrkdwn", "text": _slack_mrkdwn(f"*{k}*\n{v}", SLACK_FIELD)}
                    for k, v in list(m.fields.items())[:SLACK_FIELDS]
                ],
            }
        )
    blocks.append(
        {"type": "context", "elements": [{"type": "mrkdwn", "text": _slack_escape(m.context())}]}
    )
    fallback = f"[{m.level.upper()}] {m.title}: {m.text}" if m.title else m.text
    return {"text": _slack_mrkdwn(fallback, SLACK_TEXT), "blocks": blocks}


def discord(m: Message) -> dict[str, Any]:
    title = truncate(m.title or m.level, DISCORD_TITLE)
    footer = _discord_footer(m)
    description, fields = _discord_fit(
        title, truncate(m.text, DISCORD_DESCRIPTION), footer, _discord_fields(m)
    )
    embed = {
        "title": title,
        "description": description,
        "color": COLORS[m.level],
        "fields": fields,
        "timestamp": m.iso_time,
        "footer": {"text": footer},
    }
    content = f"[{m.level.upper()}] {m.title}" if m.title else m.text
    return {
        "content": truncate(content, DISCORD_CONTENT),
        "embeds": [embed],
        "allowed_mentions": {"parse": []},
    }


def _discord_footer(m: Message) -> str:
    """An embed's footer: the run and the step, or the tool's name when neither is known."""
    run = f"run {m.run}" if m.run else ""
    step = f"step {m.step}" if m.step is not None else ""
    return truncate(" · ".join(p for p in (run, step) if p) or "fontaine-tui", 2048)


def _discord_fields(m: Message) -> list[dict[str, Any]]:
    """An embed's fields, as many as Discord takes, each name and value cut to its limit."""
    return [
        {
            "name": truncate(k, DISCORD_FIELD_NAME) or "-",
            "value": truncate(v, DISCORD_FIELD_VALUE) or "-",
            "inline": True,
        }
        for k, v in list(m.fields.items())[:DISCORD_FIELDS]
    ]


def _discord_fit(
    title: str, description: str, footer: str, fields: list[dict[str, Any]]
) -> tuple[str, list[dict[str, Any]]]:
    """The description and fields of an embed within Discord's total size.

    The last fields go first, then the description is cut."""

    def size(description: str) -> int:
        return (
            len(title)
            + len(description)
            + len(footer)
            + sum(len(f["name"]) + len(f["value"]) for f in fields)
        )

    while fields and size(description) > DISCORD_EMBED_TOTAL:
        fields.pop()
    if size(description) > DISCORD_EMBED_TOTAL:
        description = truncate(description, DISCORD_EMBED_TOTAL - size(""))
    return description, fields


def generic(m: Message) -> dict[str, Any]:
    return {
        "level": m.level,
        "title": m.title,
        "text": m.full_text,
        "run": m.run,
        "step": m.step,
        "time": m.iso_time,
    }


def _header(value: str) -> str:
    """ASCII as is; anything else as an RFC 2047 encoded word (http.client sends latin-1)."""
    value = " ".join(value.split())
    try:
        value.encode("ascii")
    except UnicodeEncodeError:
        return Header(value, "utf-8").encode()
    return value


def ntfy(m: Message) -> tuple[bytes, dict[str, str]]:
    body = m.full_text or m.title
    data = body.encode()
    if len(data) > NTFY_BODY_BYTES:
        cut = NTFY_BODY_BYTES - len(ELLIPSIS.encode())
        data = data[:cut].decode("utf-8", "ignore").encode() + ELLIPSIS.encode()
    headers = {
        "Title": _header(truncate(m.title or m.level, 250)),
        "Priority": NTFY_PRIORITY[m.level],
        "Tags": NTFY_TAGS[m.level],
        "Content-Type": "text/plain; charset=utf-8",
    }
    return data, headers


def request_body(service: str, m: Message) -> tuple[bytes, dict[str, str]]:
    """The POST body and headers for `service` (not apprise: that goes through its library)."""
    if service == "ntfy":
        return ntfy(m)
    build = {"slack": slack, "discord": discord, "generic": generic}[service]
    return (json.dumps(build(m), ensure_ascii=False).encode(), {"Content-Type": "application/json"})
