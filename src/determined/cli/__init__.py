"""The ``det`` command line."""

from determined.cli._main import main

__all__ = ["main"]
