"""fontaine-tui: launch, watch and read pre-registered training runs in the terminal."""

__version__ = "0.1.0"
