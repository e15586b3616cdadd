"""`python -m fontaine_engine`: the engine's command line, its process ended without a last GC.

Once the command returns, the interpreter's last collection at exit would walk every object
torch and transformers made (a second or more at the end of a short run) to free what the
process's end frees anyway. The heap is frozen first, so that collection skips it; atexit
handlers (the DataLoader workers' shutdown among them) still run.
"""

import gc
import sys

from .cli import main

code = main()
gc.freeze()
sys.exit(code)
