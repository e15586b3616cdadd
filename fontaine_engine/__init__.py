"""The engine under its installed name, in a checkout.

`python -m fontaine_engine` from the repository root (or with it on PYTHONPATH) runs the code
of engine/.

The engine's code lives in engine/ and installs as the package `fontaine_engine`
(pyproject.toml maps the one onto the other), so no other project's `engine` is shadowed.
This file is only the checkout's door: the package's modules are looked up in engine/, and
engine/__init__.py runs here as the package's own. A wheel holds engine/'s files, not this.
"""

from pathlib import Path

__path__ = [str(Path(__file__).resolve().parent.parent / "engine")]
_init = Path(__path__[0]) / "__init__.py"
exec(compile(_init.read_bytes(), str(_init), "exec"))  # the engine's own init, as the package's
del _init
