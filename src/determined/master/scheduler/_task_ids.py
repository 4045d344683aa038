"""The scheduler's task id of a trial (``trial-7``), built and read in one place."""

from __future__ import annotations

from typing import Optional

__all__ = ["trial_task_id", "trial_of_task"]

_PREFIX = "trial-"


def trial_task_id(trial_id: int) -> str:
    """The task id a trial is scheduled (and its slots are held) under.

    Example:
        >>> trial_of_task(trial_task_id(7))
        7
    """
    return f"{_PREFIX}{trial_id}"


def trial_of_task(task_id: str) -> Optional[int]:
    """The trial id in ``task_id``, or None when it is not a trial's task id."""
    if not task_id.startswith(_PREFIX) or not task_id[len(_PREFIX):].isdigit():
        return None
    return int(task_id[len(_PREFIX):])
