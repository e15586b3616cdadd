import sys

from fontaine_tui.cli import main

sys.exit(main())
