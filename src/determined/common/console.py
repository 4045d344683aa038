"""The rich console the CLI and local runs print with."""

from __future__ import annotations

import re
from typing import Iterable

from rich.console import Console
from rich.segment import Segment

__all__ = ["TrimmedConsole"]

# Spaces (and the style codes among them) before a line's end.
_LINE_END_SPACES = re.compile(r"(?:[ ]|\x1b\[[0-9;]*m)+(?=\n)")


class TrimmedConsole(Console):
    """A :class:`rich.console.Console` whose lines never end in spaces.

    Rich pads a centered title and leaves the space it wrapped a line at; in a pipe, a
    log file or a copied terminal those trailing spaces are noise.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> TrimmedConsole(file=out, width=12).print("Best checkpoint: /a/b")
        >>> out.getvalue()
        'Best\\ncheckpoint:\\n/a/b\\n'
    """

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        # Rich's one place where segments become the text written: trim it there, so
        # every renderable (tables, wrapped text, progress) is covered.
        rendered = super()._render_buffer(buffer)
        return _LINE_END_SPACES.sub(lambda m: m.group().replace(" ", ""), rendered)
