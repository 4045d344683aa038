"""Why trials failed, as ``det trial describe``, ``det experiment describe`` and a
followed experiment's last lines say it: a trial's ``error`` (the master's ``Trial
failed (exit code 1): ...``, with the traceback or the last lines its process wrote;
bounded in size) and the command that shows its whole log (``flags`` after it, for a
local run's: :func:`local_flags`). A trial stored before trials kept errors has none:
only the command is named."""

from __future__ import annotations

import argparse
import shlex
from typing import Any, Dict, List

from determined.common.wording import counted

__all__ = ["failed_trials_lines", "local_flags", "trial_error_lines", "trial_failure_lines"]

_FAILED = "Trial failed"


def trial_error_lines(trial: Dict[str, Any]) -> List[str]:
    """The trial's error naming the trial (``Trial 7 failed (exit code 1): ...``); [] if
    it has none.

    Example:
        >>> trial_error_lines({"id": 7, "error": "Trial failed (exit code 1): no GPU found"})
        ['Trial 7 failed (exit code 1): no GPU found']
    """
    error = str(trial.get("error") or "")
    if error.startswith(_FAILED):
        error = f"Trial {trial['id']} failed{error[len(_FAILED):]}"
    return error.splitlines()


def local_flags(args: argparse.Namespace) -> str:
    """The flags naming where ``args`` read its trials (" --local", " --local-dir D")."""
    if getattr(args, "local_dir", None):
        return f" --local-dir {shlex.quote(args.local_dir)}"
    return " --local" if getattr(args, "local", False) else ""


def _logs(trial_id: int, flags: str) -> str:
    return f"`det trial logs {trial_id}{flags}`"


def trial_failure_lines(trial: Dict[str, Any], flags: str = "") -> List[str]:
    """Why an ERROR trial failed and where its whole log is; [] for another state.

    Example:
        >>> trial_failure_lines({"id": 7, "state": "ERROR",
        ...                      "error": "Trial failed (exit code 1): no GPU found"})
        ['Trial 7 failed (exit code 1): no GPU found', 'Its whole log: `det trial logs 7`']
    """
    if trial.get("state") != "ERROR":
        return []
    lines = trial_error_lines(trial)
    if not lines:
        return [f"Trial {trial['id']} failed; see why with {_logs(trial['id'], flags)}"]
    return lines + [f"Its whole log: {_logs(trial['id'], flags)}"]


def failed_trials_lines(trials: List[Dict[str, Any]], flags: str = "") -> List[str]:
    """How many of ``trials`` failed and which, then why the first did (its error's last
    line ends the lines: what a terminal shows last); [] if none did.

    Example:
        >>> for line in failed_trials_lines([
        ...         {"id": 3, "state": "ERROR",
        ...          "error": "Trial failed (exit code 1): its last output:\\nno GPU found"},
        ...         {"id": 4, "state": "ERROR"}, {"id": 5, "state": "COMPLETED"}]):
        ...     print(line)
        2 trials failed: 3, 4; trial 3's log: `det trial logs 3`
        Trial 3 failed (exit code 1): its last output:
        no GPU found
    """
    failed = sorted((t for t in trials if t.get("state") == "ERROR"), key=lambda t: t["id"])
    if not failed:
        return []
    first = failed[0]
    ids = ", ".join(str(t["id"]) for t in failed)
    why = trial_error_lines(first)
    if not why:
        return [f"{counted(len(failed), 'trial')} failed: {ids}; "
                f"see why with {_logs(first['id'], flags)}"]
    log = "its log" if len(failed) == 1 else f"trial {first['id']}'s log"
    return [f"{counted(len(failed), 'trial')} failed: {ids}; {log}: "
            f"{_logs(first['id'], flags)}", *why]
