"""A sealed bundle as a pre-registration report (Markdown or HTML), from its content only.

The sections follow an OSF / AsPredicted pre-registration: the question, the hypotheses
(the bounds), the design (recipe and platform), the analysis (the rule), the amendments
with when each was declared relative to the data seen, and the result (the verdict).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping

from fontaine_tui.core.limits import json_loads
from fontaine_tui.core.seal.bundle import Bundle

FORMATS = ("md", "html")
Section = tuple[str, list[str]]  # a heading and its lines (each a paragraph or list item)


def _obj(value: object) -> Mapping[str, object]:
    return value if isinstance(value, dict) else {}


def _pairs(table: Mapping[str, object]) -> list[str]:
    return [f"{k}: {json.dumps(v)}" for k, v in sorted(table.items())]


def _amendments(verdict: Mapping[str, object]) -> list[str]:
    out = []
    listed = verdict.get("amendments")
    for item in listed if isinstance(listed, list) else []:
        a = _obj(item)
        declared = a.get("declared_at") or "in the preset at launch"
        out.append(
            f"#{a.get('id')} {a.get('kind')} ({a.get('source')}): declared {declared}, "
            f"after step {a.get('last_step_seen')} was seen, first affecting step "
            f"{a.get('first_affected_step')}; {a.get('status')}: {a.get('reason')}"
        )
    return out or ["none declared"]


def sections(bundle: Bundle) -> tuple[str, list[Section]]:
    """The report's title and sections, read from the bundle's files."""
    prereg = _obj(json_loads(bundle.files["prereg.json"]))
    verdict = _obj(json_loads(bundle.files["verdict.json"]))
    preset = _obj(prereg.get("preset"))
    run, rule = _obj(preset.get("run")), _obj(preset.get("verdict"))
    title = f"Pre-registration report: {run.get('name') or prereg.get('preset_name')}"
    body: list[Section] = [
        ("Registration", _registration(prereg, bundle.digest)),
        ("Question", [str(run.get("question") or "no question stated in the preset")]),
        ("Hypotheses (bounds)", _hypotheses(rule, preset)),
        ("Design", _design(preset)),
        ("Analysis (the rule)", _pairs(rule)),
        ("Amendments", _amendments(verdict)),
        ("Result", _result(verdict, bundle.manifest)),
    ]
    return title, body


def _registration(prereg: Mapping[str, object], digest: str) -> list[str]:
    """What was frozen at launch, where and by which version, and the bundle's digest."""
    return [
        f"preset {prereg.get('preset_name')}, sha256 {prereg.get('preset_sha256')}",
        f"frozen at launch {prereg.get('launched_at')} on {prereg.get('host')} "
        f"(fontaine-tui {prereg.get('version')})",
        f"bundle digest {digest}",
    ]


def _hypotheses(rule: Mapping[str, object], preset: Mapping[str, object]) -> list[str]:
    """The rule's bounds, then what each class is taken to mean."""
    bounds = [k for k in rule if k.startswith(("healthy_", "drift_"))]
    return [f"{k}: {json.dumps(rule[k])}" for k in sorted(bounds)] + [
        f"{k}: {v}" for k, v in sorted(_obj(preset.get("interpretation")).items())
    ]


def _design(preset: Mapping[str, object]) -> list[str]:
    """The recipe and the platform, key by key."""
    return [f"recipe {line}" for line in _pairs(_obj(preset.get("recipe")))] + [
        f"platform {line}" for line in _pairs(_obj(preset.get("platform")))
    ]


def _result(verdict: Mapping[str, object], manifest: Mapping[str, object]) -> list[str]:
    """The verdict, its reason and interpretation, and the evidence it was read from."""
    provisional = " (provisional)" if verdict.get("provisional") else ""
    return [
        f"verdict {verdict.get('verdict')} ({verdict.get('label')}) at step "
        f"{verdict.get('read_step')}{provisional}",
        str(verdict.get("reason", "")),
        str(verdict.get("interpretation", "")),
        f"evidence: {manifest.get('evidence')}",
    ]


def render(bundle: Bundle, fmt: str) -> str:
    """The report in `fmt` ("md" or "html")."""
    title, body = sections(bundle)
    return _markdown(title, body) if fmt == "md" else _html(title, body)


def _markdown(title: str, body: list[Section]) -> str:
    out = [f"# {title}", ""]
    for heading, lines in body:
        out += [f"## {heading}", "", *(f"- {line}" for line in lines), ""]
    return "\n".join(out)


def _html(title: str, body: list[Section]) -> str:
    e = html.escape
    out = [
        "<!DOCTYPE html>",
        '<html><head><meta charset="utf-8">',
        f"<title>{e(title)}</title></head><body>",
        f"<h1>{e(title)}</h1>",
    ]
    for heading, lines in body:
        out += [f"<h2>{e(heading)}</h2>", "<ul>", *(f"<li>{e(x)}</li>" for x in lines), "</ul>"]
    return "\n".join([*out, "</body></html>", ""])
