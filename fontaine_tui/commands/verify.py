"""`fontaine-tui verify BUNDLE`: a sealed bundle checked offline."""

from __future__ import annotations

import argparse

from fontaine_tui.commands._args import examples
from fontaine_tui.core.text import literal
from fontaine_tui.model.seal import verify


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        description="Check a bundle written by `fontaine-tui seal`, offline, in this order: "
        "the manifest's digest, every file's sha256 against MANIFEST.json, the amendment "
        "chain from prereg.json, the preset the bundled verdict.json was read with, the "
        "banked runs' sha256s, the review chain, and the verdict recomputed from the bundled "
        "log (and the banked runs the bundle carries, never this host's bank) against the "
        "bundled verdict.json. The first broken file or key is named.",
        epilog=examples(
            "fontaine-tui verify runs/r7/r7.seal.zip",
            "fontaine-tui verify ~/received/r7.seal.zip",
            exits="0 intact, 2 broken (one line naming the file or key) or bad input",
        ),
    )
    p.add_argument("bundle", help="a .seal.zip written by `fontaine-tui seal`")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    done = verify(args.bundle)
    b = done.bundle
    print(f"intact: {literal(args.bundle)}  ({len(b.files) + 1} files, digest {b.digest})")
    if done.recomputed:
        print("verdict.json: recomputed from the bundled evidence, the same")
        for ref in done.banked:
            print(f"bank: {literal(ref)}: read from the bundle (this host's bank is not read)")
        if done.unread:
            print(
                f"bank: {literal(', '.join(done.unread))}: not in the bundle (the bank that "
                "sealed it did not hold it), so neither verdict read its curve"
            )
    else:
        print(
            "evidence: none in the bundle; verify covered the hashes, the chains and that "
            "verdict.json reads the frozen preset, not the verdict itself"
        )
    return 0
