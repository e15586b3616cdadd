"""The packages and where their files are; pyproject.toml holds everything else.

The repository's engine/ folder installs as `fontaine_engine`, a name no other project takes, and
the presets/ folder as `fontaine_tui/presets`, so an installed copy finds its presets from any
folder. A checkout runs the engine under the same name through fontaine_engine/__init__.py,
which no wheel holds."""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["fontaine_tui", "fontaine_tui.*"]),
        "fontaine_tui.presets",
        "fontaine_engine",
    ],
    package_dir={"fontaine_tui.presets": "presets", "fontaine_engine": "engine"},
    package_data={
        "fontaine_tui": ["*.tcss", "demo/*.toml", "demo/run/*", "demo/bank/*.json"],
        "fontaine_tui.presets": ["*.toml"],
    },
)
