"""`python -m fontaine_tui`: the `fontaine-tui` command."""

import sys

from fontaine_tui.cli import main

sys.exit(main())
