"""A trial's log lines as the web UI's log view shows them, so that its search finds
what it shows (``webui/src/failure.ts``: ``modelDirPaths`` and ``logLinePaths``, which
this mirrors; keep both alike).

A trial process runs in a copy of the model directory (``<root>/exp<E>-trial<T>-pid<P>``,
removed when it exits). In a traceback's frame and exception lines, and in the harness's
``trial N failed: ...`` line, a path inside that copy reads relative to the model
directory (``File "model_def.py"``) and the copy itself reads "the model directory";
every other line is shown as written.

Example:
    >>> shown_line('  File "/tmp/w/exp1-trial2-pid9/model_def.py", line 3, in f')
    '  File "model_def.py", line 3, in f'
"""

from __future__ import annotations

import re

__all__ = ["WORKDIR_LIKE", "model_dir_paths", "shown_line", "shows"]

_WORKDIR = re.compile(
    r"(?:[A-Za-z]:)?[\\/](?:[^\s\"'`()<>\\/]+[\\/])*exp\d+-trial\d+-pid\d+"
    r"(?:\.[0-9a-f]+\.[0-9a-f]+)?(?:-of\d+(?:\.[0-9a-f]+\.[0-9a-f]+)?)?(?![\w-])([\\/])?",
    re.ASCII)
_FRAME = re.compile(r"^[ |+-]*File \"")
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b(:.*)?$",
                        re.ASCII)
_HARNESS = re.compile(r"^trial \d+ failed: (.+)$")
#: A SQL ``LIKE`` pattern every line naming a trial's working directory matches.
WORKDIR_LIKE = "%-trial%-pid%"


def model_dir_paths(text: str) -> str:
    """``text`` with paths in a trial's working directory relative to the model directory."""
    return _WORKDIR.sub(lambda m: "" if m.group(1) else "the model directory", text)


def shown_line(line: str) -> str:
    """``line`` as the trial's log view shows it."""
    bare = line.rstrip()
    mapped = _FRAME.match(bare) or _EXCEPTION.match(bare) or _HARNESS.match(bare)
    return model_dir_paths(line) if mapped else line


def shows(line: str, search: str) -> bool:
    """Whether the view's ``line`` contains ``search`` (case-insensitive), as shown."""
    return search.lower() in shown_line(line).lower()
