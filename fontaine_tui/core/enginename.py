"""The engine's module name, as every `python -m` of the engine runs it.

The engine's code is the repository's engine/ folder. It installs as `fontaine_engine` (a
name no other project takes), and a checkout reaches the same folder under that name
(fontaine_engine/__init__.py)."""

ENGINE_MODULE = "fontaine_engine"
