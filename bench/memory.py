"""Resident memory after loading the 1M-line log into the columnar store (target <= 250 MB).

python bench/make_log.py      # once
python bench/memory.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_log import ensure  # noqa: E402

from fontaine_tui.core.log.read import load_log  # noqa: E402


def main() -> int:
    path = ensure()
    before = psutil.Process().memory_info().rss
    store = load_log(path)
    after = psutil.Process().memory_info().rss
    print(f"{path.name}: {len(store.steps)} train rows, {len(store.probes)} probes")
    print(
        f"rss before {before / 2**20:.0f} MB, after {after / 2**20:.0f} MB "
        f"(store adds {(after - before) / 2**20:.0f} MB); target <= 250 MB"
    )
    return 0 if after <= 250 * 2**20 else 1


if __name__ == "__main__":
    sys.exit(main())
