"""A trial's log lines as the web UI's log view shows them, so that its search finds
what it shows (``webui/src/failure.ts``: ``modelDirPaths`` and ``logLinePaths``, which
this mirrors; keep both alike).

A trial process runs in a copy of the model directory (``<root>/exp<E>-trial<T>-pid<P>``,
removed when it exits). In a traceback's frame and exception lines, and in the harness's
``trial N failed: ...`` line, a path inside that copy reads relative to the model
directory (``File "model_def.py"``) and the copy itself reads "the model directory";
every other line is shown as written.

A local run (``det experiment create --local``) stores its trials' lines mapped the same
way, with the user's directory in place of the copy (``shown_line`` given it): the directory
then exists for the reader, and the path stays whole.

Example:
    >>> shown_line('  File "/tmp/w/exp1-trial2-pid9/model_def.py", line 3, in f')
    '  File "model_def.py", line 3, in f'
"""

from __future__ import annotations

import re
from typing import Dict, List, NamedTuple, Optional, Tuple

__all__ = ["WORKDIR_LIKE", "WrittenFailure", "model_dir_paths", "shown_line", "shows",
           "written_failure", "written_tail", "written_traceback"]

_WORKDIR = re.compile(
    r"(?:[A-Za-z]:)?[\\/](?:[^\s\"'`()<>\\/]+[\\/])*exp\d+-trial\d+-pid\d+"
    r"(?:\.[0-9a-f]+\.[0-9a-f]+)?(?:-of\d+(?:\.[0-9a-f]+\.[0-9a-f]+)?)?(?![\w-])([\\/])?",
    re.ASCII)
_FRAME = re.compile(r"^[ |+-]*File \"")
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b(:.*)?$",
                        re.ASCII)
_HARNESS = re.compile(r"^trial \d+ failed: (.+)$")
# What ``determined.launch.wrap_rank`` writes before each line of a rank's output.
_RANK_PREFIX = re.compile(r"^\[rank=\d+\] ")
_TRACEBACK_START = "Traceback (most recent call last):"
# The platform's own lines in a trial's output (``common.log_format``, the engine's, the
# trial runner's last line on a master: ``harness._rest_host``).
_PLATFORM_LINE = re.compile(
    r"^(?:\[rank=\d+\] )?(?:\d\d:\d\d:\d\d (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) |\[determined\] "
    r"|trial \d+ exited: )")
# The core's line when a script ended by a signal (``engine.ScriptTrials.script_exited``).
_SCRIPT_KILLED = re.compile(r"^\[determined\] Script killed by signal (\d+)$")
#: A SQL ``LIKE`` pattern every line naming a trial's working directory matches.
WORKDIR_LIKE = "%-trial%-pid%"


def model_dir_paths(text: str, model_dir: Optional[str] = None) -> str:
    """``text`` with paths in a trial's working directory relative to the model directory,
    or, given ``model_dir`` (the user's directory the copy was made from), in it."""
    if model_dir is None:
        return _WORKDIR.sub(lambda m: "" if m.group(1) else "the model directory", text)
    base = model_dir.rstrip("\\/") or model_dir[:1]
    return _WORKDIR.sub(lambda m: base + (m.group(1) or ""), text)


def shown_line(line: str, model_dir: Optional[str] = None) -> str:
    """``line`` as the trial's log view shows it (``model_dir``: see model_dir_paths); a
    rank's line (``[rank=1] ...``) as its text. A local run stores its lines so, with
    its user's directory as ``model_dir``.

    Example:
        >>> shown_line('[rank=1]   File "/tmp/w/exp1-trial2-pid9/train.py", line 3', "/me/m")
        '[rank=1]   File "/me/m/train.py", line 3'
    """
    prefix = _RANK_PREFIX.match(line)
    bare = line[prefix.end() if prefix else 0:].rstrip()
    mapped = _FRAME.match(bare) or _EXCEPTION.match(bare) or _HARNESS.match(bare)
    return model_dir_paths(line, model_dir) if mapped else line


def shows(line: str, search: str) -> bool:
    """Whether the view's ``line`` contains ``search`` (case-insensitive), as shown."""
    return search.lower() in shown_line(line).lower()


def written_traceback(text: str,
                      model_dir: Optional[str] = None) -> Optional[Tuple[Optional[int], str]]:
    """The Python traceback a trial's output ``text`` ends with, its lines mapped as
    :func:`shown_line` maps them: ``(None, traceback)``; when ranks wrote tracebacks
    (``[rank=N] ...`` lines, interleaved), the one of the rank that failed first,
    without the prefix: ``(N, traceback)`` (a launcher's own traceback, written after
    its ranks', only says that a rank failed). None if ``text`` holds no traceback.

    Example:
        >>> written_traceback("Traceback (most recent call last):\\n  File \\"x.py\\", "
        ...                   "line 1\\nOSError: no\\n", "/me/m")
        (None, 'Traceback (most recent call last):\\n  File "x.py", line 1\\nOSError: no')
    """
    streams: Dict[Optional[int], List[Tuple[int, str]]] = {}  # (line number, text)
    for number, line in enumerate(text.splitlines()):
        prefix = _RANK_PREFIX.match(line)
        rank = int(line[len("[rank="):prefix.end() - 2]) if prefix else None
        streams.setdefault(rank, []).append((number, line[prefix.end():] if prefix else line))
    found: Dict[Optional[int], Tuple[int, str]] = {}  # (line it starts at, traceback)
    for rank, lines in streams.items():
        starts = [i for i, (_, line) in enumerate(lines) if line.startswith(_TRACEBACK_START)]
        if not starts:
            continue
        block = [lines[starts[-1]][1]]
        for _, line in lines[starts[-1] + 1:]:
            block.append(line)
            if not line.startswith(" "):  # the exception's line ends it
                break
        found[rank] = (lines[starts[-1]][0],
                       "\n".join(shown_line(line, model_dir) for line in block))
    ranks = sorted((found[rank][0], rank) for rank in found if rank is not None)
    rank = ranks[0][1] if ranks else None
    return (rank, found[rank][1]) if rank in found else None


def written_tail(text: str, model_dir: Optional[str] = None, lines: int = 5) -> str:
    """The last ``lines`` lines of a trial's output ``text`` that its own code wrote (the
    platform's log lines left out), every path in the trial's copy of the model
    directory in ``model_dir`` (None: relative to it, as :func:`model_dir_paths`); ""
    if none. For a script that failed without a traceback (``sys.exit("...")``, a
    message and ``exit 1``), what it said last is why.

    Example:
        >>> written_tail("12:00:01 INFO trial 1 runs its script: python train.py\\n"
        ...              "no GPU found\\n12:00:02 INFO trial 1: script exited with code 1\\n",
        ...              "/me/m")
        'no GPU found'
    """
    own = [line for line in text.splitlines()
           if line.strip() and not _PLATFORM_LINE.match(line)]
    return "\n".join(model_dir_paths(line, model_dir) for line in own[-lines:])


class WrittenFailure(NamedTuple):
    """Why a trial's process failed, as its output says (:func:`written_failure`)."""

    #: "" (a traceback), "its rank N failed first" or "its last output".
    lead: str
    #: The traceback, or the process's last lines of its own.
    lines: str

    @property
    def text(self) -> str:
        """``lead:`` and the lines (the lines alone without a lead): the message the
        experiment core stores as the trial's error (``Trial failed (...): <text>``)."""
        return f"{self.lead}:\n{self.lines}" if self.lead else self.lines


def written_failure(text: str, model_dir: Optional[str] = None) -> Optional[WrittenFailure]:
    """Why a trial's process failed, from its output ``text``: the traceback it ends
    with (``lead`` "", or "its rank N failed first" for a distributed one:
    :func:`written_traceback`) or, without one, its last lines of its own (``lead`` "its
    last output": :func:`written_tail`); a script that a signal ended, that signal
    (what it wrote last did not end it). None if it wrote nothing of its own. A local
    run and the master word their failures with it alike.

    Example:
        >>> written_failure("[determined] Trial starts\\nno GPU found\\n").text
        'its last output:\\nno GPU found'
        >>> written_failure("step 3\\n[determined] Script killed by signal 9\\n").text
        'the script was killed by signal 9'
    """
    killed = [m for m in map(_SCRIPT_KILLED.match, text.splitlines()) if m]
    if killed:
        return WrittenFailure("", f"the script was killed by signal {killed[-1].group(1)}")
    found = written_traceback(text, model_dir)
    if found is not None:
        rank, trace = found
        return WrittenFailure("" if rank is None else f"its rank {rank} failed first", trace)
    tail = written_tail(text, model_dir)
    return WrittenFailure("its last output", tail) if tail else None
