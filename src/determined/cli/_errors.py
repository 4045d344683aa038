"""How ``det`` words its errors on stderr: ``det: error: ...`` folded at a terminal's width.

    >>> error_text("no such experiment")
    'det: error: no such experiment'
"""

from __future__ import annotations

import os
import re
import sys
from typing import Optional

__all__ = ["error_text", "error_width", "fold_error", "with_list_hint"]

#: Where to see what exists, for a master's "KIND KEY not found" (HTTP 404) by kind.
#: Only the CLI adds these: the master's message (which the web UI shows, and tests
#: match) stays as it is.
_LIST_HINTS = {
    "experiment": "run `det experiment list --all` to see experiments",
    "trial": "run `det experiment list-trials EXPERIMENT_ID` to see an experiment's trials",
    "checkpoint": ("run `det experiment list-checkpoints EXPERIMENT_ID` to see an "
                   "experiment's checkpoints"),
    "model": "run `det model list` to see models",
    "template": "run `det template list` to see templates",
    "task": "run `det task list` to see tasks",
    "user": "run `det user list` to see users",
    "agent": "run `det agent list` to see agents",
}
_NOT_FOUND = re.compile(r"^(?P<kind>[a-z]+) \S.* not found \(HTTP 404\)$")


def error_text(message: str, width: Optional[int] = None) -> str:
    """``det: error: <message>``; with a ``width`` (stderr is a terminal) each line is
    folded at spaces to fit, continuation lines indented under their own line's text
    (a bullet's under its text), words such as paths and URLs never broken. A traceback
    in the message (user code's, as a failed local run quotes it) is left as written,
    from its ``Traceback`` line on: its lines are code and paths to read and copy."""
    return fold_error(f"det: error: {message}", width)


def with_list_hint(message: str) -> str:
    """``message`` with where to see what exists after a master's "not found" whose
    kind has a list command; any other message as it is.

        >>> with_list_hint("model 'nope' not found (HTTP 404)")
        "model 'nope' not found (HTTP 404); run `det model list` to see models"
    """
    first, sep, rest = message.partition("\n")
    match = _NOT_FOUND.match(first)
    hint = match and _LIST_HINTS.get(match["kind"])
    return f"{first}; {hint}{sep}{rest}" if hint else message


def fold_error(text: str, width: Optional[int]) -> str:
    """An error's whole ``text`` (``PROG: error: ...``), or another long line of det's
    (a table's ``(hidden: ...)`` note), folded at ``width`` as :func:`error_text` says;
    as it is without a width."""
    import textwrap

    if not width:
        return text
    lines = text.splitlines()
    end = next((i for i, line in enumerate(lines)
                if line.lstrip().startswith("Traceback (most recent call last)")), len(lines))
    out = []
    for line in lines[:end]:
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        hang = indent + (2 if stripped.startswith("- ") else 0) + (2 if indent == 0 else 0)
        out.append(textwrap.fill(line, width=max(width, 40), subsequent_indent=" " * hang,
                                 break_long_words=False, break_on_hyphens=False,
                                 drop_whitespace=True) if len(line) > width else line)
    return "\n".join(out + lines[end:])


def error_width() -> Optional[int]:
    """stderr's width when it is a terminal, else None (no folding)."""
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns if sys.stderr.isatty() else None
    except (OSError, ValueError, AttributeError):
        return None
