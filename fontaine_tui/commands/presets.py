"""`fontaine-tui presets [show NAME]`: list presets, or print one with its hash."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fontaine_tui.commands._args import examples
from fontaine_tui.core import tomlfile
from fontaine_tui.core.bank import store as bank
from fontaine_tui.core.errors import InputError
from fontaine_tui.core.preset.checks import PresetError
from fontaine_tui.core.preset.find import list_presets, load_preset, resolve
from fontaine_tui.core.preset.record import Preset
from fontaine_tui.core.readfile import read_whole
from fontaine_tui.core.secrets import mask_toml, redact_url


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "presets",
        description="List the presets found, or print one.",
        epilog=examples(
            "fontaine-tui presets",
            "fontaine-tui presets show my-preset",
            "fontaine-tui presets show ./presets/mine.toml",
        ),
    )
    p.add_argument("action", nargs="?", choices=["list", "show"], default="list")
    p.add_argument("name", nargs="?", help="preset name or path (with show)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "show":
        if not args.name:
            raise InputError("presets show: expected a preset name or path")
        _show(args.name)
    else:
        _list()
    return 0


def _show(name: str) -> None:
    """The preset's text, its credentials masked, then its path, hash and stop_on_lock gate."""
    preset = load_preset(name)
    text = _masked_text(resolve(name), preset)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.write(f"# path: {preset.path}\n# sha256 (canonical form): {preset.sha256}\n")
    if preset.stops_on_lock:
        sys.stdout.write(
            "# [gates] stop_on_lock: the run is stopped, with a checkpoint, once its "
            "decision locks or the GPU-hours gate is reached\n"
        )


def _masked_text(path: Path, preset: Preset) -> str:
    """The file's text read again, every credential shown as *** by its parsed value.

    Masked by parsed value (core/secrets.py), an escape or a line continuation hides none; a
    [[notify]] url shows as its redacted form."""
    try:  # the text shown is the text whose parsed values are masked
        text = read_whole(path).decode("utf-8")
        doc = tomlfile.loads(text)
    except (OSError, InputError, UnicodeDecodeError, tomlfile.TOMLDecodeError) as exc:
        raise InputError(f"{path}: changed while it was read ({exc}); show it again") from None
    urls = {spec.url: redact_url(spec.url, spec.service) for spec in preset.notify if spec.url}
    try:
        text = mask_toml(text, doc, urls.get)
    except ValueError as exc:
        raise InputError(f"{path}: not shown: {exc} (core/secrets.py)") from None
    for url, shown in urls.items():  # the same URL elsewhere too: a comment, the question
        text = text.replace(url, shown)
    return text


def _list() -> None:
    """One line a preset found: its hash and run name, or INVALID and the next step."""
    rows = []
    for name, path in list_presets().items():
        try:
            p = load_preset(str(path))
            rows.append(f"{name:<20}{p.sha256[:12]}  {p.run_name}  ({path})")
        except InputError as exc:
            # one line a preset, what to do at its end: the first word is always a name
            rows.append(f"{name:<20}{'INVALID':<14}{exc}; next: {next_step(name, path, exc)}")
    sys.stdout.write("\n".join(rows) + ("\n" if rows else "no presets found\n"))


def next_step(name: str, path: Path, exc: InputError) -> str:
    """What makes an INVALID preset load, said at the end of its line in the listing.

    A comparator whose banked run is not in the bank: the commands that bank one (a run of the
    shipped preset of that name first, where there is one, as docs/reference-experiment.md
    does). Anything else: the key and the file to fix."""
    if isinstance(exc, PresetError) and (ref := _missing_bank(path, exc.key)) is not None:
        run = f"runs/{ref}"
        make = (
            f"{_init_first(ref)}fontaine-tui launch {ref} --plain --output-dir {run}; "
            if ref in list_presets()
            else f"a finished run in {run}, then "
        )
        # `;`, not `&&`: launch --plain exits with its verdict's code, and a run that is not
        # HEALTHY is as good a comparator
        return f"bank the run it compares with: {make}fontaine-tui bank add {run} --as {ref}"
    where = exc.key if isinstance(exc, PresetError) else "it"
    return f"fix {where} in {path} (`fontaine-tui presets show {name}` checks it again)"


def _init_first(name: str) -> str:
    """The launch that makes `name`'s recipe.init first, or "".

    That is a shipped preset's whose output_dir is the init, where the checkpoint is not there
    yet (demosonly_2rank_cpu starts from pretrain_so101's)."""
    try:
        init = load_preset(name).recipe.get("init")
    except (InputError, OSError):
        return ""
    if not isinstance(init, str) or not init or Path(init).exists():
        return ""
    for other in list_presets():
        try:
            made = load_preset(other).run.get("output_dir")
        except (InputError, OSError):
            continue
        if made == init:
            return f"fontaine-tui launch {other} --plain; "
    return ""


def _missing_bank(path: Path, key: str) -> str | None:
    """The banked run's name that `comparators.NAME.bank` names, when the bank has none of it."""
    parts = key.split(".")
    if len(parts) != 3 or parts[0] != "comparators" or parts[2] != "bank":
        return None
    try:
        ref = tomlfile.loads(read_whole(path).decode("utf-8"))["comparators"][parts[1]]["bank"]
    except (OSError, InputError, UnicodeDecodeError, tomlfile.TOMLDecodeError, KeyError, TypeError):
        return None
    if not isinstance(ref, str):
        return None
    name = ref.partition("@")[0]
    try:
        bank.check_name(name)
    except InputError:
        return None
    return None if (bank.bank_dir() / name).is_dir() else name
