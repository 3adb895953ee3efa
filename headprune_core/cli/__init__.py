"""The command line: ``headprune <command>`` (or ``python -m headprune_core <command>``)."""

from headprune_core.cli.main import main

__all__ = ["main"]
