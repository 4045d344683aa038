"""Why a trial's process failed, read from its log as the master stored it: the same
selection as a local run's (``common.log_view.written_failure``: the traceback it ended
with, else its last lines of its own), from the lines after the process started."""

from __future__ import annotations

import re

from determined.common.log_view import written_failure
from determined.master.db import Store

__all__ = ["process_failure"]

#: The newest lines of a trial's log read for it (a failure's traceback or last lines
#: are at the end; an older process's are cut off at its successor's first line).
TAIL_LINES = 400
# The core's line as a process of the trial starts (``ExperimentCore.trial_started``).
_STARTED = re.compile(r"^\[determined\] Trial (?:starts|restarts|resumes)\b")


def process_failure(store: Store, trial_id: int) -> str:
    """Why the last process of trial ``trial_id`` failed, as its output says, for
    ``ExperimentCore.trial_exited``'s ``message``: a traceback (``its rank N failed
    first:`` before it for a distributed trial's), or ``its last output:`` and its last
    lines; "" if it wrote nothing of its own. Its paths inside the trial's copy of the
    model directory read relative to it, as the web UI's log view shows them.

    Example:
        >>> process_failure(store, 7)  # doctest: +SKIP
        'its last output:\\nloading data\\nlightning is not installed: pip install lightning'
    """
    lines = [row.line for row in store.get_logs(trial_id, tail=TAIL_LINES)]
    starts = [i for i, line in enumerate(lines) if _STARTED.match(line)]
    found = written_failure("\n".join(lines[starts[-1] + 1:] if starts else lines))
    return found.text if found is not None else ""
